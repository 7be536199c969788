package journal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// replayPlan is what Open decided to replay.
type replayPlan struct {
	snapshot uint64   // snapshot to load, 0 if none
	deltas   []uint64 // deltas to load after it, in order (each follows the one before)
	base     uint64   // first segment the replay needs: the last delta's or the snapshot's number, or 1
	segments []uint64 // base, base+1, ... in order
	obsolete []string // files superseded by the snapshot, removed after Replay
}

// planReplay lists the directory and decides what Replay reads. Damage it
// can see without reading records (a corrupt snapshot, a missing segment)
// fails here unless Options.Recover is set.
func (j *Journal) planReplay() error {
	l, err := listDir(j.dir)
	if err != nil {
		return err
	}
	for _, name := range l.temps {
		path := join(j.dir, name)
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("journal: removing unfinished snapshot %s: %w", path, err)
		}
		j.log.Info("removed an unfinished snapshot left by an interrupted snapshot", "file", path)
		j.note(func(r *Report) { r.Removed = append(r.Removed, path) })
	}

	p := replayPlan{base: 1}
	for i := len(l.snapshots) - 1; i >= 0; i-- {
		seq := l.snapshots[i]
		path := join(j.dir, snapshotName(seq))
		if p.snapshot != 0 {
			p.obsolete = append(p.obsolete, path)
			continue
		}
		verr := verifySnapshot(path, seq)
		var ce *CorruptError
		switch {
		case verr == nil:
			p.snapshot, p.base = seq, seq
		case errors.As(verr, &ce) && j.opts.Recover:
			if err := j.setAside(path, "snapshot is corrupt; falling back to an older one", verr); err != nil {
				return err
			}
		default:
			return verr
		}
	}

	if err := j.planDeltas(&p, l); err != nil {
		return err
	}

	next := p.base
	for i, seq := range l.segments {
		path := join(j.dir, segmentName(seq))
		if seq < p.base {
			p.obsolete = append(p.obsolete, path)
			continue
		}
		if seq == next {
			p.segments = append(p.segments, seq)
			next++
			continue
		}
		gap := &CorruptError{
			File:   join(j.dir, segmentName(next)),
			Offset: 0,
			Reason: fmt.Sprintf("segment missing from the sequence (the journal continues with %s)", segmentName(seq)),
		}
		if !j.opts.Recover {
			return gap
		}
		if err := j.setAsideAll(l.segments[i:], segmentName, "segment follows a missing segment", gap); err != nil {
			return err
		}
		break
	}
	if p.snapshot != 0 && len(p.segments) == 0 {
		// WriteSnapshot installs snapshot N only once segment N exists, so
		// its absence means records appended after the snapshot are gone.
		missing := &CorruptError{
			File:   join(j.dir, segmentName(p.base)),
			Reason: fmt.Sprintf("segment missing: %s continues in it (acknowledged records may be lost)", filepath.Base(p.chainEnd(j.dir))),
		}
		if !j.opts.Recover {
			return missing
		}
		j.log.Error("journal recovery goes on without a missing segment", "damage", missing)
		j.note(func(r *Report) { r.Missing = append(r.Missing, missing.File) })
	}
	j.plan = p
	return nil
}

// planDeltas chooses the deltas that follow the chosen snapshot: those
// after it, in order, each naming the one before it (a delta records the
// snapshot or delta it follows). A delta that does not follow the chain
// so far (one is missing), or is corrupt, or a delta with no snapshot
// before it, is damage: Open fails, or under Recover that delta and every
// later one are set aside and the state is the chain's up to there.
// Deltas older than the snapshot are superseded.
func (j *Journal) planDeltas(p *replayPlan, l listing) error {
	end := p.snapshot
	for i, seq := range l.deltas {
		path := join(j.dir, deltaName(seq))
		if seq < p.snapshot {
			p.obsolete = append(p.obsolete, path)
			continue
		}
		prev, err := verifyDelta(path, seq)
		var ce *CorruptError
		switch {
		case err == nil && end == 0:
			err = &CorruptError{File: path, Reason: fmt.Sprintf("delta follows %s, which is missing (no snapshot before it)", name(prev, l))}
		case err == nil && prev != end:
			err = &CorruptError{File: path, Reason: fmt.Sprintf("delta follows %s, but the snapshot and deltas before it end with %s: a delta is missing",
				name(prev, l), filepath.Base(p.chainEnd(j.dir)))}
		case err != nil && !errors.As(err, &ce):
			return err
		}
		if err == nil {
			p.deltas = append(p.deltas, seq)
			end = seq
			continue
		}
		if !j.opts.Recover {
			return err
		}
		if err := j.setAsideAll(l.deltas[i:], deltaName, "delta is damaged or does not follow the snapshot and deltas before it", err); err != nil {
			return err
		}
		break
	}
	if end != 0 {
		p.base = end
	}
	return nil
}

// name names the snapshot or delta seq for a message, as the listing has it.
func name(seq uint64, l listing) string {
	if slices.Contains(l.deltas, seq) {
		return deltaName(seq)
	}
	return snapshotName(seq)
}

// chainEnd is the path of the last file the plan loads (the last delta,
// else the snapshot).
func (p *replayPlan) chainEnd(dir string) string {
	if n := len(p.deltas); n > 0 {
		return join(dir, deltaName(p.deltas[n-1]))
	}
	return join(dir, snapshotName(p.snapshot))
}

// setAside renames a file Replay will not read, logging why.
func (j *Journal) setAside(path, why string, cause error) error {
	dst, err := setAside(path)
	if err != nil {
		return err
	}
	j.log.Error("journal recovery dropped a file", "file", path, "kept_as", dst, "why", why, "damage", cause)
	j.note(func(r *Report) { r.SetAside = append(r.SetAside, dst) })
	return nil
}

// setAsideAll sets aside the files named name(seq) for each of seqs.
func (j *Journal) setAsideAll(seqs []uint64, name func(uint64) string, why string, cause error) error {
	for _, seq := range seqs {
		if err := j.setAside(join(j.dir, name(seq)), why, cause); err != nil {
			return err
		}
	}
	return nil
}

// SnapshotInfo describes the snapshot Replay hands to loadSnapshot.
type SnapshotInfo struct {
	// Content is the Options.ContentVersion the snapshot was written with
	// (0 for a file of journal format 1).
	Content uint32
	// MaxBytes bounds the bytes the reader will deliver (the file's size
	// less its header): a count that could not fit in it is damage.
	MaxBytes int64
	// Deltas is how many deltas Replay will load after this snapshot or
	// delta (0: it is the last of the chain), so that the loader can
	// leave work that the deltas would redo until the chain is in.
	Deltas int
}

// Replay feeds the journal to the caller: loadSnapshot (only if there is a
// snapshot) receives the snapshot's bytes exactly as WriteSnapshot's writer
// produced them, then apply receives every record after it, in append
// order, with the Options.ContentVersion of the segment holding it (0 for
// journal format 1). The slice passed to apply is only valid during the
// call. An error from either callback stops Replay and is returned wrapped.
//
// A torn last record of the last segment is truncated (with a warning);
// other damage fails Replay with a *CorruptError naming file and offset,
// unless Options.Recover is set (see Options). On success the journal opens
// a new segment and is ready for Append. Replay may be called only once.
func (j *Journal) Replay(loadSnapshot func(r io.Reader, info SnapshotInfo) error, apply func(rec []byte, content uint32) error) error {
	return j.ReplayWith(ReplayFuncs{Snapshot: loadSnapshot, Apply: apply})
}

// ReplayFuncs are the callbacks of ReplayWith.
type ReplayFuncs struct {
	Snapshot func(r io.Reader, info SnapshotInfo) error // Replay's loadSnapshot
	// Delta receives each delta after the snapshot, in order, as
	// WriteDelta's writer produced it; required if there are any.
	Delta func(r io.Reader, info SnapshotInfo) error
	Apply func(rec []byte, content uint32) error // Replay's apply
	// Applied, if set, is called after the last record of each segment
	// has been passed to Apply, before Replay acts on what it found there
	// (cutting a torn tail, sealing, starting the new segment): a caller
	// that applies records on another goroutine waits for them there, so
	// that its error stops Replay before anything is written, as an
	// error from Apply does.
	Applied func() error
}

// ReplayWith is Replay with the callbacks of f.
func (j *Journal) ReplayWith(f ReplayFuncs) error {
	loadSnapshot, apply := f.Snapshot, f.Apply
	j.mu.Lock()
	switch {
	case j.closed:
		j.mu.Unlock()
		return ErrClosed
	case j.replayed:
		j.mu.Unlock()
		return errors.New("journal: Replay called twice")
	}
	j.replayed = true
	j.mu.Unlock()

	start := time.Now()
	p := j.plan
	if loadSnapshot == nil || apply == nil {
		return errors.New("journal: Replay needs both a loadSnapshot and an apply function")
	}
	if p.snapshot != 0 {
		path := join(j.dir, snapshotName(p.snapshot))
		if err := loadSnapshotFile(path, p.snapshot, false, len(p.deltas), loadSnapshot); err != nil {
			return err
		}
		j.note(func(r *Report) { r.Snapshot = path })
	}
	for i, seq := range p.deltas {
		path := join(j.dir, deltaName(seq))
		if f.Delta == nil {
			return fmt.Errorf("journal: %s needs a delta loader", path)
		}
		if err := loadSnapshotFile(path, seq, true, len(p.deltas)-1-i, f.Delta); err != nil {
			return err
		}
		j.note(func(r *Report) { r.Deltas = append(r.Deltas, path) })
	}

	tail, err := j.replaySegments(apply, f.Applied)
	if err != nil {
		return err
	}
	next := tail.next
	for _, path := range p.obsolete {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			j.log.Warn("could not remove a file superseded by the snapshot", "file", path, "err", err)
			continue
		}
		j.note(func(r *Report) { r.Removed = append(r.Removed, path) })
	}

	seg, err := j.newSegment(next)
	if err != nil {
		return err
	}
	// Now that segment next exists, the one before it is sealed: from here
	// on, losing the new segment is detected (see switchSegment).
	if tail.seal != "" {
		if err := sealFile(tail.seal, next-1, tail.sealMark, tail.sealSlot); err != nil {
			seg.finishClose()
			return err
		}
	}
	j.mu.Lock()
	if j.closed { // Close ran meanwhile
		j.mu.Unlock()
		seg.finishClose()
		return ErrClosed
	}
	j.seg = seg
	j.curSeg = next
	j.pending = []chunk{{seg: next}}
	j.lastSnap = p.base
	if p.snapshot == 0 {
		j.lastSnap = 0
	}
	j.ready = true
	j.mu.Unlock()
	go j.flushLoop()

	rep := j.Report()
	j.log.Info("journal replayed", "snapshot", rep.Snapshot, "segments", rep.Segments,
		"records", rep.Records, "new_segment", segmentName(next), "took", time.Since(start))
	return nil
}

// replayTail is where replaySegments left the journal.
type replayTail struct {
	next     uint64 // number of the segment to create for new appends
	seal     string // path of the segment to seal once next exists ("": none)
	sealMark mark   // the seal to write
	sealSlot int    // the mark slot the seal goes to
}

// replaySegments applies the planned segments in order, repairing a torn
// tail or (under Recover) cutting at damage.
//
// Format 2 segments carry a mark (format.go): records up to mark.end were
// acknowledged, so a segment whose readable records stop before it lost
// acknowledged records, whatever the damage looks like (a torn write can
// only affect what was never acknowledged). A sealed segment promises its
// successor; an unsealed one that is not the last may only be followed by
// an empty segment (a crash between creating the successor and sealing).
func (j *Journal) replaySegments(apply func([]byte, uint32) error, applied func() error) (replayTail, error) {
	p := j.plan
	tail := replayTail{next: p.base}
	// promised: the segment was completely created before its predecessor
	// was sealed (or before the snapshot naming it was installed), so not
	// even its header can be torn.
	promised := p.snapshot != 0
	unsealed := "" // a format 2 segment before this one that was not sealed
	for i, seq := range p.segments {
		last := i == len(p.segments)-1
		path := join(j.dir, segmentName(seq))
		if unsealed != "" {
			if err := j.checkUnsealed(unsealed, path, seq); err != nil {
				return replayTail{}, err
			}
		}
		n, end, hdr, d, err := replaySegment(path, seq, apply)
		j.note(func(r *Report) { r.Records += n; r.Segments++; r.Bytes += end })
		if err == nil && applied != nil {
			if err = applied(); err != nil {
				err = fmt.Errorf("journal: applying the records of %s: %w", path, err)
			}
		}
		if err != nil {
			return replayTail{}, err
		}
		tail = replayTail{next: seq + 1}
		if hdr.hasMark {
			tail.seal, tail.sealSlot = path, 1-hdr.slot
			tail.sealMark = mark{end: end, sealed: true, gen: hdr.mark.gen}
			if stop := end; stop < hdr.mark.end {
				d = lostAcknowledged(hdr.mark.end, stop, d)
			}
		}
		if d == nil {
			unsealed = ""
			if hdr.hasMark && !hdr.mark.sealed {
				unsealed = path
			}
			promised = hdr.hasMark && hdr.mark.sealed
			if promised {
				tail.seal = "" // already sealed as it is
			}
			if last && promised {
				if err := j.missingSuccessor(path, seq); err != nil {
					return replayTail{}, err
				}
			}
			continue
		}
		// Cutting the segment at the damage: the seal records the new end,
		// in a new generation if it is shorter than a mark already said.
		tail.sealMark.end = d.off
		if d.off < hdr.mark.end {
			tail.sealMark.gen++
		}
		clean, torn := false, false
		if last && !d.acked && !(promised && d.off < headerSizeV1) {
			if clean, err = isPreallocatedEnd(path, d); err != nil {
				return replayTail{}, err
			}
			if !clean {
				if torn, err = isTornTail(path, d); err != nil {
					return replayTail{}, err
				}
			}
		}
		switch {
		case clean:
			// The zeros written ahead of the last record: cut them
			// off silently, the segment is never appended to again.
			return tail, truncateFile(path, d.off)
		case torn:
			if d.off < headerSizeV1 {
				// Not even the header was written: the segment holds
				// nothing and goes; the one before it (if any) ends the
				// journal.
				tail = j.tailBefore(i)
			}
			return tail, j.truncateTornTail(path, d)
		case j.opts.Recover:
			if d.off < headerSizeV1 {
				tail = j.tailBefore(i)
			}
			return tail, j.keepPrefix(path, d, p.segments[i+1:])
		default:
			return replayTail{}, d.corrupt(path)
		}
	}
	return tail, nil
}

// tailBefore is the tail when segment i of the plan is dropped entirely:
// the segment before it continues in the new one (seq i's number).
func (j *Journal) tailBefore(i int) replayTail {
	p := j.plan
	if i == 0 {
		return replayTail{next: p.base}
	}
	seq := p.segments[i]
	prev := join(j.dir, segmentName(seq-1))
	t := replayTail{next: seq}
	f, fr, err := openFrames(prev, segmentMagic, seq-1)
	if err != nil {
		return t
	}
	f.Close()
	if fr.hdr.hasMark && !fr.hdr.mark.sealed {
		t.seal, t.sealSlot = prev, 1-fr.hdr.slot
		t.sealMark = mark{end: fr.size, sealed: true, gen: fr.hdr.mark.gen}
	}
	return t
}

// lostAcknowledged is the damage of a segment whose readable records stop
// at stop although its mark says records up to acked were acknowledged.
func lostAcknowledged(acked, stop int64, d *damage) *damage {
	why := "the file ends there"
	if d != nil {
		why = d.reason
	}
	return &damage{off: stop, acked: true, reason: fmt.Sprintf(
		"records up to byte offset %d were acknowledged, but they stop here (%s)", acked, why)}
}

// missingSuccessor reports a sealed last segment: the segment it promises
// is gone, and with it acknowledged records.
func (j *Journal) missingSuccessor(path string, seq uint64) error {
	missing := &CorruptError{
		File:   join(j.dir, segmentName(seq+1)),
		Reason: fmt.Sprintf("segment missing: %s is sealed and continues in it (acknowledged records may be lost)", path),
	}
	if !j.opts.Recover {
		return missing
	}
	j.log.Error("journal recovery goes on without a missing segment", "damage", missing)
	j.note(func(r *Report) { r.Missing = append(r.Missing, missing.File) })
	return nil
}

// checkUnsealed accepts an unsealed segment followed by seq only if seq
// holds no record (the crash window of switchSegment).
func (j *Journal) checkUnsealed(unsealed, path string, seq uint64) error {
	f, fr, err := openFrames(path, segmentMagic, seq)
	if err != nil {
		return nil // a damaged header is judged by the replay itself
	}
	defer f.Close()
	if _, err := fr.next(); err != nil {
		return nil // no record (or damage, judged by the replay)
	}
	bad := &CorruptError{File: unsealed, Offset: slotOffset,
		Reason: fmt.Sprintf("segment was not sealed although %s continues it with records (its header was rolled back or damaged)", path)}
	if !j.opts.Recover {
		return bad
	}
	j.log.Error("journal recovery goes on past an unsealed segment", "damage", bad)
	return nil
}

// replaySegment applies every readable record of one segment. It returns
// the number applied, the offset where reading stopped (the end of the
// last good frame), the segment's header and, if it stopped at damage,
// where.
func replaySegment(path string, seq uint64, apply func([]byte, uint32) error) (int, int64, fileHeader, *damage, error) {
	f, fr, err := openFrames(path, segmentMagic, seq)
	var d *damage
	if errors.As(err, &d) {
		return 0, 0, fileHeader{}, d, nil
	}
	if err != nil {
		return 0, 0, fileHeader{}, nil, err
	}
	defer f.Close()
	n := 0
	for {
		off := fr.off
		rec, err := fr.next()
		if errors.Is(err, io.EOF) {
			return n, off, fr.hdr, nil, nil
		}
		if errors.As(err, &d) {
			return n, off, fr.hdr, d, nil
		}
		if err != nil {
			return n, off, fr.hdr, nil, err
		}
		if err := apply(rec, fr.hdr.content); err != nil {
			return n, off, fr.hdr, nil, fmt.Errorf("journal: applying the record at %s offset %d: %w", path, off, err)
		}
		n++
	}
}

// truncateTornTail cuts the torn end off the last segment (or removes a
// segment whose header was never completely written).
func (j *Journal) truncateTornTail(path string, d *damage) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("journal: stat %s: %w", path, err)
	}
	j.note(func(r *Report) {
		r.TornTail = fmt.Sprintf("%s@%d", path, d.off)
		r.TruncatedSize = st.Size() - d.off
	})
	j.log.Warn("truncating the torn end of the journal (a write interrupted by a crash, never acknowledged)",
		"file", path, "offset", d.off, "bytes", st.Size()-d.off, "reason", d.reason)
	if d.off < headerSizeV1 {
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("journal: removing %s: %w", path, err)
		}
		return syncDir(j.dir)
	}
	return truncateFile(path, d.off)
}

// keepPrefix handles damage inside a segment under Options.Recover: the
// damaged segment is copied aside, cut at the damage, and the segments after
// it are set aside. Everything dropped is logged by name.
func (j *Journal) keepPrefix(path string, d *damage, later []uint64) error {
	cause := d.corrupt(path)
	if d.off < headerSizeV1 {
		if err := j.setAside(path, "segment header is damaged", cause); err != nil {
			return err
		}
	} else {
		dst, err := copyAside(path)
		if err != nil {
			return err
		}
		j.log.Error("journal recovery dropped the records after the damage", "file", path,
			"offset", d.off, "original_kept_as", dst, "damage", cause)
		j.note(func(r *Report) { r.SetAside = append(r.SetAside, dst) })
		if err := truncateFile(path, d.off); err != nil {
			return err
		}
	}
	return j.setAsideAll(later, segmentName, "segment follows a damaged one", cause)
}

// truncateFile cuts path to size bytes, durably.
func truncateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("journal: opening %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("journal: truncating %s to %d bytes: %w", path, size, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("journal: fsync of %s: %w", path, err)
	}
	return nil
}

// copyAside copies path to a ".damaged" name, durably, and returns it.
func copyAside(path string) (string, error) {
	dst := fmt.Sprintf("%s%s-%s", path, damagedSuffix, time.Now().UTC().Format("20060102T150405.000000000"))
	src, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("journal: opening %s: %w", path, err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("journal: creating %s: %w", dst, err)
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return "", fmt.Errorf("journal: copying %s to %s: %w", path, dst, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return "", fmt.Errorf("journal: fsync of %s: %w", dst, err)
	}
	return dst, out.Close()
}

// ReplayBytes returns the size of the segment files Replay will read, as
// Open found them (headers, framing and preallocated space included): an
// upper bound of the records to replay after the snapshot.
func (j *Journal) ReplayBytes() int64 {
	var n int64
	for _, seq := range j.plan.segments {
		if st, err := os.Stat(join(j.dir, segmentName(seq))); err == nil {
			n += st.Size()
		}
	}
	return n
}
