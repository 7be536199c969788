package journal

import (
	"context"
	"fmt"
	"math"
)

// Ticket identifies a position in the journal: Wait(t) returns once
// everything up to t is durable. Tickets increase in append order.
type Ticket uint64

// closedTicket is handed out by Append after Close; it is never durable.
const closedTicket = Ticket(math.MaxUint64)

// Append adds one record to the write buffer and returns its ticket. It
// never blocks on disk: it copies rec (the caller may reuse it) and
// returns. It does not start a write by itself unless unwrittenLimit bytes
// are buffered: Wait (or Flush, Rotate, Close) does, so a record nobody
// waits for costs no sync of its own and rides along with the next one
// that is waited for. Call it while holding the lock that orders your
// state changes, so that journal order equals apply order, and call Wait
// after releasing that lock.
//
// Append panics if Replay has not succeeded (the caller's state would be
// missing the journal's contents) or if rec is larger than MaxRecordSize.
// After Close it returns a ticket for which Wait reports ErrClosed.
func (j *Journal) Append(rec []byte) Ticket {
	if len(rec) > MaxRecordSize {
		panic(fmt.Sprintf("journal: record of %d bytes exceeds MaxRecordSize", len(rec)))
	}
	h := frameHeader(rec) // checksum computed outside the lock

	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return closedTicket
	}
	if !j.ready {
		j.mu.Unlock()
		panic("journal: Append called before a successful Replay")
	}
	c := &j.pending[len(j.pending)-1]
	c.buf = append(c.buf, h[:]...)
	c.buf = append(c.buf, rec...)
	j.rotBytes += int64(len(h) + len(rec))
	j.last++
	t := j.last
	full := len(c.buf) >= unwrittenLimit
	j.mu.Unlock()

	j.counters.records.Add(1)
	j.counters.bytes.Add(uint64(len(h) + len(rec)))
	if full {
		j.wake()
	}
	return t
}

// unwrittenLimit bounds what Append lets accumulate before it starts a
// write although nobody waits: records nobody waits for are written with
// the next group anyway, this only caps the buffer.
const unwrittenLimit = 64 << 10

// wake tells the flusher there is work without ever blocking.
func (j *Journal) wake() {
	select {
	case j.kick <- struct{}{}:
	default:
	}
}

// outcome is what Wait returns for t when it does not (or no longer)
// sleep, and whether it would sleep. Called with mu held.
func (j *Journal) outcome(t Ticket) (err error, pending bool) {
	switch {
	case t <= j.durable:
		return nil, false
	case j.failed != nil:
		return j.failed, false
	case j.stopped || (j.closed && !j.ready) || t == closedTicket:
		return ErrClosed, false
	}
	return nil, true
}

// beingWritten reports whether t is in the round the flusher is writing,
// whose publication wakes its Waits and runs its notices; otherwise the
// round after it covers t. Called with mu held.
func (j *Journal) beingWritten(t Ticket) bool {
	return t <= j.taken && j.roundDone != nil
}

// Wait returns nil once the record of ticket t is durable under the sync
// policy; the journal's write failure if writing failed first; ErrClosed if
// the journal was closed before the record was written; or ctx's error.
// Returning early because of ctx does not cancel the record.
func (j *Journal) Wait(ctx context.Context, t Ticket) error {
	for {
		j.mu.Lock()
		if err, pending := j.outcome(t); !pending {
			j.mu.Unlock()
			return err
		}
		ch, kick := j.nextDone, true
		if j.beingWritten(t) {
			ch, kick = j.roundDone, false // being written: no need to kick
			j.roundWaiters++
		} else {
			j.nextWaiters++
		}
		j.mu.Unlock()
		if kick {
			j.wake() // the flusher may not know anyone waits (see Append)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Notify is Wait without the waiting: f is called once with what Wait
// would return (never a context's error), on the flusher's goroutine right
// after it publishes the round that makes t durable (or fails, or closes
// the journal), or at once on the caller's goroutine when that is already
// known. f must not block: the next round waits for it. It lets the
// goroutine that completed a sync write the replies it allows instead of
// waking one goroutine per waiter (internal/replyhold). Stats count a
// notice as a waiter.
func (j *Journal) Notify(t Ticket, f func(error)) {
	j.mu.Lock()
	err, pending := j.outcome(t)
	if !pending {
		j.mu.Unlock()
		f(err)
		return
	}
	if j.beingWritten(t) {
		j.roundNotices = append(j.roundNotices, notice{t: t, f: f}) // being written
		j.mu.Unlock()
		return
	}
	j.nextNotices = append(j.nextNotices, notice{t: t, f: f})
	j.mu.Unlock()
	j.wake() // the flusher may not know anyone waits (see Append)
}

// notice is one Notify call waiting for its round.
type notice struct {
	t   Ticket
	f   func(error)
	err error // its outcome, set when its round is published
}

// Check is Wait without the waiting, for a record whose durability the
// caller does not wait for: it returns the journal's write failure if one
// happened, ErrClosed if the record will never be written (appended after
// Close), and nil otherwise, whether or not the record is durable yet.
func (j *Journal) Check(t Ticket) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	err, _ := j.outcome(t)
	return err
}

// Fail stops the journal as a failed write does, with err: records not
// yet durable are never written, every Wait and Check for one returns
// err, and no snapshot is written from then on. For a caller that changed
// its state but cannot journal the change (a record it cannot encode):
// what follows that change must not reach the disk without it, and a
// snapshot would hold a change its client was told failed. A restart
// recovers what is on disk. Only the first failure is kept.
func (j *Journal) Fail(err error) {
	j.mu.Lock()
	if j.failed == nil {
		j.failed = err
	}
	j.mu.Unlock()
	j.wake() // its round publishes the failure to the sleeping Waits
}

// Flush waits until everything appended so far is durable.
func (j *Journal) Flush(ctx context.Context) error {
	j.mu.Lock()
	t := j.last
	j.mu.Unlock()
	return j.Wait(ctx, t)
}

// BytesSinceRotate returns how many bytes were appended since the last
// rotation (snapshot) or since Replay: a cue for when to snapshot.
func (j *Journal) BytesSinceRotate() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.rotBytes
}
