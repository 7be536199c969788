package journal

import (
	"fmt"
	"os"
	"time"
)

// Overlapping group writes (SyncGroup with O_DSYNC writes,
// Options.SyncsInFlight above 1; docs/persistence.md, "Group commit, sixth
// pass: overlapping syncs").
//
// With one group written at a time, a caller whose record arrives while
// a group's synchronous write is in flight waits for the rest of that
// write, then for the flusher to publish it and take the next round, then
// for its own write. Here that caller starts the next group's write
// itself, at once, through the same O_DSYNC descriptor, at the offset
// following the write in flight (the disk runs two such writes
// concurrently). The flusher keeps everything else: it alone writes
// marks, preallocates, switches segments, syncs under the other policies
// and closes, and before any of that it stops the overlapping (file =
// nil) and waits until every round in flight is published (quiesce).
//
// Publication stays in journal order (round.go): a round is acknowledged
// only once its write and every earlier round's have returned, so a later
// group that reached the disk before an earlier one is never
// acknowledged before it. A crash can then leave a gap (zeros or a torn
// write) followed by records of a later, unacknowledged group; the mark
// never covers them, and Replay cuts them off as a torn tail
// (framereader.go, isTornTail).
type overlap struct {
	max int // writes allowed in flight at once (Options.SyncsInFlight)

	// Guarded by Journal.mu. While active, the flusher's segment offsets
	// are stale and end is where the next write goes; file is set while
	// writes may start (nil once the flusher quiesces or the journal
	// fails).
	active    bool
	file      *os.File // the O_DSYNC descriptor of segment seq
	seq       uint64
	end       int64         // end of the writes issued to it
	published int64         // end of the published ones: how far the mark may go
	sync      time.Duration // moving average of a group write's duration
}

// takeWriteLocked takes a round for a write through the overlapping
// descriptor, if the pending records allow it: all of them go to the
// segment it writes (no rotation pending), fewer than ov.max writes are
// in flight, and the journal is neither failed nor closing. A leader (a
// waiting caller, not the flusher) also needs a write in flight (else the
// flusher, kicked, writes as it always did) and records to write. A write
// does not start beside one that has run for more than half the moving
// average of a group write (ov.sync, starting at 1 s so the first writes
// may overlap): that one ends soon, and the next round gathers the
// callers arriving meanwhile (the flusher then waits for it, flushRound).
// The caller holds mu.
//
// A write that starts while others are in flight rewrites their bytes
// too: it covers everything from the start of the oldest round not yet
// published, so once it returns, every earlier round is on disk as well,
// whatever order the disk completed them in. A crash in the middle thus
// leaves what a single interrupted write leaves (records up to some
// point, then an unwritten or torn rest), never a hole before records of
// a later group; Replay's torn-tail rule is unchanged.
func (j *Journal) takeWriteLocked(leader bool) (r *round, buf []byte, off int64, f *os.File) {
	ov := &j.ov
	n := len(j.inflight)
	if ov.file == nil || j.failed != nil || j.closed || n >= ov.max ||
		len(j.pending) != 1 || j.pending[0].seg != ov.seq {
		return nil, nil, 0, nil
	}
	pending := j.pending[0].buf
	if leader && (n == 0 || len(pending) == 0) {
		return nil, nil, 0, nil
	}
	if n > 0 && len(pending) > 0 && time.Since(j.inflight[n-1].started) > ov.sync/2 {
		return nil, nil, 0, nil // the write in flight ends soon: the next round gathers more
	}
	off, buf = ov.end, pending
	switch {
	case n == 0: // alone: write the pending buffer itself
		j.pending = []chunk{{seg: j.curSeg, buf: j.spare[:0]}}
		j.spare = nil
	case len(pending) == 0: // nothing new: nothing to write
		buf = nil
	default:
		// Rewrite the unpublished bytes of the rounds in flight (see
		// above): the newest write covers them, from its start.
		from := j.inflight[0].own
		var prior []byte
		for i := n - 1; i >= 0; i-- {
			if w := j.inflight[i]; len(w.buf) > 0 {
				prior = w.buf[from-w.start:]
				break
			}
		}
		off = ov.end - int64(len(prior))
		buf = make([]byte, 0, len(prior)+len(pending))
		buf = append(append(buf, prior...), pending...)
		j.pending[0].buf = pending[:0] // copied: reuse it
		j.counters.overlapped.Add(1)
	}
	r = j.newRoundLocked()
	r.start, r.own = off, ov.end
	ov.end += int64(len(pending))
	r.end, r.buf = ov.end, buf
	r.started = time.Now()
	return r, buf, off, ov.file
}

// writeRound writes a round taken by takeWriteLocked and publishes what it
// can. It reports how many Waits the publication woke.
func (j *Journal) writeRound(r *round, buf []byte, off int64, f *os.File) (woke int) {
	var err error
	wrote := len(buf) > 0
	if wrote {
		start := time.Now()
		if err = j.writeGroup(f, buf, off); err != nil {
			err = fmt.Errorf("journal: writing %s: %w", f.Name(), err)
		} else {
			d := j.counters.groupSynced(start)
			j.mu.Lock()
			j.ov.sync += (d - j.ov.sync) / 8
			j.mu.Unlock()
		}
	}
	return j.complete(r, wrote, err, false)
}

// writeAt is Journal.writeGroup's default: one synchronous write.
func writeAt(f *os.File, buf []byte, off int64) error {
	_, err := f.WriteAt(buf, off)
	return err
}

// lead is Wait's part in overlapping: having taken round r under mu
// (takeWriteLocked(true), the caller's record among it), write it, and
// tell the flusher, which writes the mark of what was published.
func (j *Journal) lead(r *round, buf []byte, off int64, f *os.File) {
	j.writeRound(r, buf, off, f)
	j.wake()
}

// startOverlap lets the next writes overlap, from the flusher's segment
// as it stands (nothing in flight: the flusher wrote the last rounds
// itself). It does nothing if overlapping is on already, or impossible.
func (j *Journal) startOverlap() {
	s := j.seg
	if j.ov.max < 2 || s == nil || s.dsync == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ov.active || j.failed != nil || j.closed {
		return
	}
	j.ov.active = true
	j.ov.file, j.ov.seq, j.ov.end, j.ov.published = s.dsync, s.seq, s.off, s.off
}

// quiesce stops the overlapping and waits until every round in flight is
// published, then hands the write position back to the flusher's segment:
// from then on the flusher is the only writer, as before, until
// startOverlap. After a failure the position is the end of what was
// acknowledged: what was written after it is not (Close's final mark and
// truncation must not claim it).
func (j *Journal) quiesce() {
	j.mu.Lock()
	j.ov.file = nil
	var last *round
	if n := len(j.inflight); n > 0 {
		last = j.inflight[n-1]
	}
	j.mu.Unlock()
	if last != nil {
		<-last.done
	}
	j.mu.Lock()
	active, end, issued := j.ov.active, j.ov.end, j.ov.end
	if j.failed != nil {
		end = j.ov.published
	}
	j.ov.active = false
	j.mu.Unlock()
	if s := j.seg; active && s != nil && s.seq == j.ov.seq {
		s.off = end
		s.alloc = max(s.alloc, issued)
	}
}

// markEnd is how far the segment's records are acknowledged: every write
// is published when nobody overlaps, else up to ov.published.
func (j *Journal) markEnd() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ov.active {
		return j.ov.published
	}
	return j.seg.off
}

// writeEnd is where the next record goes in the flusher's segment.
func (j *Journal) writeEnd() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ov.active {
		return j.ov.end
	}
	return j.seg.off
}
