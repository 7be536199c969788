package journal

import (
	"runtime"
	"time"
)

// spareLimit caps the write buffer kept for reuse, so one huge record does
// not pin its memory forever.
const spareLimit = 4 << 20

// flushLoop is the background writer. Each round takes everything
// appended so far, writes it with one write call per segment, synchronous
// under SyncGroup (segment.go, useDataSyncWrites; or followed by one
// fdatasync) and releases every waiter up to the last ticket taken.
// Appends made meanwhile form the next round's group, which starts as soon
// as this one is published and its waiters had the processor: there is no
// gathering delay, and with overlapping writes (overlap.go) a caller
// waiting meanwhile starts it even before. Zeros are preallocated after
// publishing, so waiters never wait for them unless they appended during
// that step.
//
// Under SyncInterval a round only writes; the first round that leaves the
// segment unsynced arms a timer, and the round it starts when it fires
// syncs (so a write waits at most one interval for its fsync).
func (j *Journal) flushLoop() {
	defer close(j.done)
	var due *time.Timer // SyncInterval: armed while written data is unsynced
	defer func() {
		if due != nil {
			due.Stop()
		}
	}()
	j.startOverlap()
	for {
		var dueC <-chan time.Time
		if due != nil {
			dueC = due.C
		}
		forced := false
		select {
		case <-j.kick:
		case <-j.stop:
		case <-dueC:
			due, forced = nil, true
		}
		woke, closing := j.flushRound(forced)
		if closing {
			return
		}
		failed := j.hasFailed() || !j.markAcknowledged()
		if woke > 0 {
			// The waiters just woken were queued on this goroutine's P,
			// which the next round's write would keep in a system call
			// until the runtime takes it back or another P steals them
			// (≈ 0.1 ms on the 2-core box measured). Let them run first:
			// their replies go out while the next group only gathers.
			runtime.Gosched()
		}
		if !failed && j.needsZeros() {
			j.preallocate()
		}
		j.startOverlap()
		if !failed && due == nil && j.opts.Sync == SyncInterval && j.seg.dirty {
			due = time.NewTimer(j.opts.SyncInterval)
		}
	}
}

// flushRound takes and writes one round: through the overlapping
// descriptor when it can (overlap.go; if only the age of the write in
// flight forbids it, once that write is published), else, once nothing
// else is in flight, by writeChunks as a lone writer. It reports how many waiters the
// publication woke and whether the journal is closing (the last round).
func (j *Journal) flushRound(forced bool) (woke int, closing bool) {
	for {
		j.mu.Lock()
		r, buf, off, f := j.takeWriteLocked(false)
		var wait chan struct{}
		if r == nil && j.ov.file != nil && len(j.inflight) > 0 && !j.closed && j.failed == nil &&
			len(j.pending) == 1 && j.pending[0].seg == j.ov.seq {
			wait = j.inflight[len(j.inflight)-1].done
		}
		j.mu.Unlock()
		if r != nil {
			return j.writeRound(r, buf, off, f), false
		}
		if wait == nil {
			break
		}
		<-wait
	}
	j.quiesce()
	chunks, r, closing := j.takePending()
	wrote, err := j.writeChunks(chunks, j.opts.Sync == SyncGroup || closing || forced)
	if closing && j.seg != nil {
		if ferr := j.seg.finishClose(); err == nil {
			err = ferr
		}
		j.seg = nil
	}
	return j.complete(r, wrote, err, closing), closing
}

// hasFailed reports whether the journal has failed.
func (j *Journal) hasFailed() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.failed != nil
}

// needsZeros reports whether less than half a step of zeros is left ahead
// of the write position.
func (j *Journal) needsZeros() bool {
	s := j.seg
	return s != nil && s.max > 0 && s.alloc-j.writeEnd() < s.step/2
}

// markAcknowledged records in the segment's header how far its records
// are acknowledged (mark.go), after the waiters were released: the mark is
// written to the operating system now and synced later (by the next
// preallocation step or the finish; under SyncGroup without O_DSYNC, and
// SyncInterval, by the next sync), so it never claims more than is
// durable. With overlapping writes it stops at the last published round.
func (j *Journal) markAcknowledged() bool {
	if err := j.seg.markAcknowledged(j.markEnd()); err != nil {
		j.fail(err)
		return false
	}
	return true
}

// preallocate extends the zeros ahead of the current segment, once the
// writes in flight are published (quiesce). Failing to
// write them (a full disk, say) only costs speed: it is logged and
// preallocation stops for this segment; writing records reports the real
// trouble, if any. A failed sync, though, fails the journal like any
// failed sync: after it the kernel may have dropped dirty pages.
func (j *Journal) preallocate() {
	j.quiesce()
	if err := j.seg.extendZeros(); err != nil {
		j.seg.max = 0
		j.log.Warn("journal preallocation failed; the segment grows with each write", "err", err)
		return
	}
	if j.opts.Sync != SyncGroup {
		return
	}
	// The size changed: this sync commits metadata, once per step.
	if err := j.seg.sync(); err != nil {
		j.seg.max = 0
		j.fail(err)
		return
	}
	j.counters.synced()
}

// takePending swaps the pending chunks for an empty one, reusing the
// previous round's buffer, and takes the round they form.
func (j *Journal) takePending() (chunks []chunk, r *round, closing bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	chunks = j.pending
	r = j.newRoundLocked()
	j.pending = []chunk{{seg: j.curSeg, buf: j.spare[:0]}}
	j.spare = nil
	if j.failed != nil {
		chunks = nil // nothing more is written after a failure
	}
	return chunks, r, j.closed
}

// writeChunks writes the taken chunks in order, switching segment files at
// rotations, and syncs the current file when sync is set. It reports
// whether it wrote any record. Under SyncGroup with O_DSYNC each write is
// the group's sync; otherwise the fdatasync after them is (groupSynced
// counts either).
func (j *Journal) writeChunks(chunks []chunk, sync bool) (wrote bool, err error) {
	for _, c := range chunks {
		if j.seg == nil || c.seg != j.seg.seq {
			if err := j.switchSegment(c.seg); err != nil {
				return wrote, err
			}
		}
		if len(c.buf) > 0 {
			start := time.Now()
			if err := j.seg.write(c.buf); err != nil {
				return wrote, err
			}
			if j.seg.dsync != nil {
				j.counters.groupSynced(start)
			}
			wrote = true
		}
	}
	if sync && j.seg != nil && j.seg.dirty {
		start := time.Now()
		if err := j.seg.sync(); err != nil {
			return wrote, err
		}
		j.counters.groupSynced(start)
	}
	if n := len(chunks); n > 0 && cap(chunks[n-1].buf) <= spareLimit {
		j.mu.Lock()
		j.spare = chunks[n-1].buf[:0]
		j.mu.Unlock()
	}
	return wrote, nil
}

// switchSegment finishes the current segment (synced and truncated to its
// used length whatever the policy, so that only the last segment can ever
// have a torn or zero-filled end) and starts seg.
//
// The order makes a missing newest segment detectable without false
// alarms: the old segment is finished (synced, truncated), then the new one
// is created (and its directory entry fsynced), and only then is the old
// one sealed ("seq+1 exists"). A crash between the last two steps leaves
// an unsealed segment followed by an empty one, which Replay accepts.
func (j *Journal) switchSegment(seq uint64) error {
	old := j.seg
	j.seg = nil // closed below, even if a step fails
	if old != nil {
		if err := old.finish(); err != nil {
			old.close()
			return err
		}
		j.counters.synced()
	}
	s, err := j.newSegment(seq)
	if err != nil {
		if old != nil {
			old.close()
		}
		return err
	}
	j.seg = s
	if old != nil {
		err := old.seal()
		if cerr := old.close(); err == nil {
			err = cerr
		}
		return err
	}
	return nil
}

// newSegment creates segment seq; under SyncGroup its records are then
// written through an O_DSYNC descriptor (segment.go, useDataSyncWrites),
// or, if that cannot be opened, written and fdatasynced.
func (j *Journal) newSegment(seq uint64) (*segmentFile, error) {
	s, err := createSegment(j.dir, seq, j.opts.ContentVersion, j.preallocMax())
	if err != nil || j.opts.Sync != SyncGroup {
		return s, err
	}
	if err := s.useDataSyncWrites(j.openDataSync); err != nil {
		j.log.Warn("journal writes fall back to write + fdatasync", "err", err)
	}
	return s, nil
}

// preallocMax is the largest preallocation step (0: none).
func (j *Journal) preallocMax() int64 {
	switch {
	case j.opts.Preallocate < 0:
		return 0
	case j.opts.Preallocate == 0:
		return DefaultPreallocate
	}
	return j.opts.Preallocate
}
