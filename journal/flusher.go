package journal

import (
	"runtime"
	"slices"
	"time"
)

// spareLimit caps the write buffer kept for reuse, so one huge record does
// not pin its memory forever.
const spareLimit = 4 << 20

// flushLoop is the single background writer. Each round takes everything
// appended so far, writes it with one write call per segment, synchronous
// under SyncGroup (segment.go, useDataSyncWrites; or followed by one
// fdatasync) and releases every waiter up to the last ticket taken.
// Appends made meanwhile form the next round's group, which starts as soon
// as this one is published and its waiters had the processor: there is no
// gathering delay. Zeros are
// preallocated beside the rounds (segment.go, startZeros), so waiters
// never wait for them unless records outrun them.
//
// Under SyncInterval a round only writes; the first round that leaves the
// segment unsynced arms a timer, and the round it starts when it fires
// syncs (so a write waits at most one interval for its fsync).
func (j *Journal) flushLoop() {
	defer close(j.done)
	failed := false     // a round failed: the journal writes nothing more
	var due *time.Timer // SyncInterval: armed while written data is unsynced
	defer func() {
		if due != nil {
			due.Stop()
		}
	}()
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
		chunks, upTo, closing := j.takePending()
		wrote, err := j.writeChunks(chunks, j.opts.Sync == SyncGroup || closing || forced)
		if closing && j.seg != nil {
			if failed || err != nil {
				// After a failed write or sync nothing more is marked or
				// synced: a sync after a failed one can succeed with the
				// failed pages dropped, and a final mark would then claim
				// them. The segment stays as it is, zeros and all.
				j.seg.close()
			} else if ferr := j.seg.finishClose(); err == nil {
				err = ferr
			}
			j.seg = nil
		}
		woke := j.publish(upTo, err, closing, wrote)
		if closing {
			return
		}
		failed = failed || err != nil
		if !failed {
			failed = !j.markAcknowledged()
		}
		if woke > 0 {
			// The waiters just woken were queued on this goroutine's P,
			// which the next round's write would keep in a system call
			// until the runtime takes it back or another P steals them
			// (≈ 0.1 ms on the 2-core box measured). Let them run first:
			// their replies go out while the next group only gathers.
			runtime.Gosched()
		}
		if !failed {
			failed = !j.preallocate()
		}
		if !failed && due == nil && j.opts.Sync == SyncInterval && j.seg.dirty {
			due = time.NewTimer(j.opts.SyncInterval)
		}
	}
}

// markAcknowledged records in the segment's header how far its records
// are acknowledged and durable (mark.go, segment.go), after the waiters
// were released: the mark is written to the operating system now and
// synced later (by the next preallocation step or the finish; under
// SyncGroup without O_DSYNC, and SyncInterval, by the next sync), so it
// never claims more than is durable. Under SyncInterval it covers what
// the last sync did, not every record acknowledged since.
func (j *Journal) markAcknowledged() bool {
	if err := j.seg.markAcknowledged(); err != nil {
		j.publish(0, err, false, false)
		return false
	}
	return true
}

// preallocate takes the outcome of the preallocation step in flight, if
// it is done, and starts the next one when less than half a step of zeros
// is left (segment.go: the steps run beside the rounds). It reports false
// if the journal failed.
func (j *Journal) preallocate() bool {
	if err := j.takeZeros(false); err != nil {
		j.publish(0, err, false, false)
		return false
	}
	if j.seg.needsZeros() {
		j.seg.startZeros(j.opts.Sync == SyncGroup)
	}
	return true
}

// takeZeros takes the outcome of the current segment's preallocation step
// (with wait, once it is done). Failing to write the zeros (a full disk,
// say) only costs speed: it is logged and preallocation stops for this
// segment; writing records reports the real trouble, if any. A failed
// sync, though, is returned: after it the kernel may have dropped dirty
// pages, so the journal fails.
func (j *Journal) takeZeros(wait bool) error {
	r, ended := j.seg.takeZeros(wait)
	switch {
	case !ended:
	case r.syncErr != nil:
		j.seg.max = 0
		return r.syncErr
	case r.writeErr != nil:
		j.seg.max = 0
		j.log.Warn("journal preallocation failed; the segment grows with each write", "err", r.writeErr)
	case j.opts.Sync == SyncGroup:
		j.counters.synced()
	}
	return nil
}

// takePending swaps the pending chunks for an empty one, reusing the
// previous round's buffer.
func (j *Journal) takePending() (chunks []chunk, upTo Ticket, closing bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	chunks = j.pending
	j.taken, j.roundDone, j.nextDone = j.last, j.nextDone, make(chan struct{})
	j.roundWaiters, j.nextWaiters = j.nextWaiters, 0
	j.roundNotices, j.nextNotices = j.nextNotices, j.roundNotices[:0]
	j.pending = []chunk{{seg: j.curSeg, buf: j.spare[:0]}}
	j.spare = nil
	if j.failed != nil {
		chunks = nil // nothing more is written after a failure
	}
	return chunks, j.last, j.closed
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
			if j.seg.off+int64(len(c.buf)) > j.seg.alloc {
				// Past the zeros: a step in flight writes there.
				if err := j.takeZeros(true); err != nil {
					return wrote, err
				}
			}
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
	if err != nil {
		return s, err
	}
	s.markWritten = j.opts.Sync == SyncNone
	if j.opts.Sync != SyncGroup {
		return s, nil
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

// inlineNotices is how many notices of a round the flusher runs itself;
// the rest run on a goroutine of their own. A notice writes a reply
// (about 6 us on the 2-core box), and a round with dozens of them
// would hold the next round's sync back by as long as a sync.
const inlineNotices = 8

// publish records the outcome of a round, wakes its waiters and runs its
// notices (Notify); after a failure or the last round, every waiter's and
// notice's. A round that wrote records without error is counted as a
// group (with the Wait and Notify calls it releases) before anyone wakes,
// so a woken caller's Stats include it. It reports how many Wait calls
// slept on the round.
func (j *Journal) publish(upTo Ticket, err error, stopped, wrote bool) (woke int) {
	j.mu.Lock()
	notices := j.roundNotices
	j.roundNotices = nil
	defer func() { j.runNotices(notices) }() // after the lock: a notice may append
	defer j.mu.Unlock()
	woke = j.roundWaiters
	j.roundWaiters = 0
	if wrote && err == nil {
		j.counters.observeGroup(upTo, woke+len(notices))
	}
	switch {
	case j.failed != nil:
	case err != nil:
		j.failed = err
	default:
		j.durable = upTo
	}
	if stopped {
		j.stopped = true
	}
	if j.roundDone != nil {
		close(j.roundDone)
		j.roundDone = nil
	}
	if err != nil || stopped {
		close(j.nextDone)
		j.nextDone = make(chan struct{})
		j.nextWaiters = 0
	}
	if j.failed != nil || stopped {
		notices = append(notices, j.nextNotices...)
		j.nextNotices = nil
	}
	// Each notice is settled now: a round's tickets are all durable
	// unless it failed, and after a failure or the last round so is
	// every ticket (failed, or ErrClosed if never written).
	for i := range notices {
		notices[i].err, _ = j.outcome(notices[i].t)
	}
	if err != nil {
		j.log.Error("journal write failed; no further record will be acknowledged", "err", err)
	}
	return woke
}

// runNotices calls back a published round's notices, the first
// inlineNotices on the flusher's goroutine and the rest on one of their
// own, then keeps their slice for the next round.
func (j *Journal) runNotices(notices []notice) {
	inline := notices
	if len(inline) > inlineNotices {
		// Many callers (64 connections): the next round must not wait
		// for all their replies.
		rest := slices.Clone(notices[inlineNotices:])
		inline = notices[:inlineNotices]
		go func() {
			for _, n := range rest {
				n.f(n.err)
			}
		}()
	}
	for _, n := range inline {
		n.f(n.err)
	}
	clear(notices)
	j.mu.Lock()
	if j.roundNotices == nil {
		j.roundNotices = notices[:0]
	}
	j.mu.Unlock()
}
