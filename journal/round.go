package journal

import "time"

// A round is one group being written: the records appended up to upTo
// that the flusher (or, overlapping it, a waiting caller: overlap.go) took
// in one go. Rounds are published strictly in the order they were taken:
// a round's waiters wake, and the durable ticket moves past it, only once
// its write and every earlier round's write have returned.
type round struct {
	upTo    Ticket
	done    chan struct{} // closed when the round is published
	waiters int           // Waits sleeping on done (the leader included, overlap.go)
	// For a round written through the overlapping descriptor
	// (overlap.go): its own records are own..end of that segment, its
	// write covers start..end (start < own when it rewrites rounds still
	// in flight), and buf holds those bytes (nil: nothing to write),
	// reused once the round is published. Published, end is how far the
	// mark may go. All zero for a round the flusher wrote by itself
	// (writeChunks).
	start, own, end int64
	buf             []byte
	started         time.Time

	// Set by the round's writer when its write has returned.
	written bool
	wrote   bool  // it wrote records (a group)
	err     error // its write failed
	stopped bool  // the last round (Close): nothing is written after it
}

// newRoundLocked takes a round covering every ticket handed out so far:
// the Waits sleeping on nextDone are its waiters. The caller holds mu and
// takes the pending records with it.
func (j *Journal) newRoundLocked() *round {
	r := &round{upTo: j.last, done: j.nextDone, waiters: j.nextWaiters}
	j.nextDone, j.nextWaiters = make(chan struct{}), 0
	j.inflight = append(j.inflight, r)
	return r
}

// roundOfLocked returns the round in flight that covers ticket t, nil if
// none does (t is still pending). The caller holds mu.
func (j *Journal) roundOfLocked(t Ticket) *round {
	for _, r := range j.inflight {
		if t <= r.upTo {
			return r
		}
	}
	return nil
}

// complete records the outcome of round r's write and publishes every
// round whose write, and every earlier one's, has returned. It reports how
// many Wait calls slept on the rounds it published.
func (j *Journal) complete(r *round, wrote bool, err error, stopped bool) (woke int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	r.written, r.wrote, r.err, r.stopped = true, wrote, err, stopped
	for len(j.inflight) > 0 && j.inflight[0].written {
		head := j.inflight[0]
		j.inflight[0] = nil
		j.inflight = j.inflight[1:]
		woke += j.releaseLocked(head)
	}
	return woke
}

// releaseLocked publishes round r (the oldest in flight, written): a round
// that wrote records without error is counted as a group (with the Wait
// calls it releases) before anyone wakes, so a woken caller's Stats
// include it. After a failure or the last round, every round still in
// flight and every later waiter is released too: nothing after it will be
// acknowledged.
func (j *Journal) releaseLocked(r *round) (woke int) {
	woke = r.waiters
	switch {
	case j.failed != nil:
	case r.err != nil:
		j.failLocked(r.err)
	default:
		if r.wrote {
			j.counters.observeGroup(r.upTo, woke)
		}
		j.durable = r.upTo
		if r.end > 0 {
			j.ov.published = r.end
		}
	}
	if cap(r.buf) <= spareLimit && cap(r.buf) > cap(j.spare) {
		j.spare = r.buf[:0] // nobody copies from it once published
	}
	r.buf = nil
	close(r.done)
	if r.stopped {
		j.stopped = true
		j.releaseAllLocked()
	}
	return woke
}

// fail stops the journal after err (a failed mark, preallocation or
// sync outside a group's write): every waiter is released with it.
func (j *Journal) fail(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failed == nil {
		j.failLocked(err)
	}
}

// failLocked records the journal's first failure and releases everyone.
func (j *Journal) failLocked(err error) {
	j.failed = err
	j.ov.file = nil
	j.log.Error("journal write failed; no further record will be acknowledged", "err", err)
	j.releaseAllLocked()
}

// releaseAllLocked wakes the waiters of every round still in flight (their
// writers find them gone when they complete) and of the next one.
func (j *Journal) releaseAllLocked() {
	for i, r := range j.inflight {
		close(r.done)
		j.inflight[i] = nil
	}
	j.inflight = j.inflight[:0]
	close(j.nextDone)
	j.nextDone = make(chan struct{})
	j.nextWaiters = 0
}
