package worker

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// Expiry deadlines (see the package comment).
const (
	// cancelBefore is how long before the earliest lease expires the
	// task's context is cancelled.
	cancelBefore = 30 * time.Second
	// failAfter is how long after it expires the library fails the
	// attempts still pending.
	failAfter = 15 * time.Second
	// shortLease is the lease below which both deadlines fall inside the
	// lease instead: cancellation halfway, failure at its last quarter.
	shortLease = time.Minute
	// updateTimeout bounds an update the library makes on its own.
	updateTimeout = 30 * time.Second
	// failRetry is the least wait before a forced failure whose deadline
	// has passed (one that failed with the queue unreachable) is tried
	// again.
	failRetry = time.Second
)

// deadlines returns when to cancel a task and when to fail its pending
// attempts, for a lease granted at granted that expires at expires.
func deadlines(granted, expires time.Time) (cancelAt, failAt time.Time) {
	life := expires.Sub(granted)
	if life >= shortLease {
		return expires.Add(-cancelBefore), expires.Add(failAfter)
	}
	return granted.Add(life / 2), expires.Add(-life / 4)
}

// batch is one task run: the attempts of one get_work and their deadlines.
type batch struct {
	w        *Worker
	ctx      context.Context
	cancel   context.CancelFunc
	attempts []*Attempt

	mu         sync.Mutex
	stopCancel func() bool
	stopFail   func() bool
	returned   bool // the task returned: no more deadlines
}

func (w *Worker) newBatch(as []coordinate.Attempt, granted time.Time) *batch {
	b := &batch{w: w}
	b.ctx, b.cancel = context.WithCancel(w.taskCtx)
	b.attempts = make([]*Attempt, len(as))
	for i := range as {
		b.attempts[i] = &Attempt{b: b, a: as[i], granted: granted, expires: as[i].Expires}
	}
	b.mu.Lock()
	b.rearmLocked()
	b.mu.Unlock()
	return b
}

// rearmLocked sets the deadlines from the earliest lease still pending.
func (b *batch) rearmLocked() {
	b.stopTimersLocked()
	if b.returned {
		return
	}
	var first *Attempt
	for _, a := range b.attempts {
		if (a.state == statePending || a.state == stateUpdating) && (first == nil || a.expires.Before(first.expires)) {
			first = a
		}
	}
	if first == nil {
		return
	}
	clock := b.w.cfg.Clock
	now := clock.Now()
	cancelAt, failAt := deadlines(first.granted, first.expires)
	if b.ctx.Err() == nil {
		b.stopCancel = clock.AfterFunc(cancelAt.Sub(now), b.cancel)
	}
	// A deadline already past is one whose forced failure did not go
	// through (a lost lease ends the attempt): try again after a pause,
	// not in a loop as fast as the queue answers.
	failIn := failAt.Sub(now)
	if failIn <= 0 {
		failIn = failRetry
	}
	b.stopFail = clock.AfterFunc(failIn, b.expire)
}

func (b *batch) stopTimersLocked() {
	if b.stopCancel != nil {
		b.stopCancel()
		b.stopCancel = nil
	}
	if b.stopFail != nil {
		b.stopFail()
		b.stopFail = nil
	}
}

// pending returns the attempts whose fate is not set.
func (b *batch) pending() []*Attempt {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*Attempt
	for _, a := range b.attempts {
		if a.state == statePending {
			out = append(out, a)
		}
	}
	return out
}

// run runs the task, turning a panic into failed attempts.
func (b *batch) run(task Task) {
	defer func() {
		r := recover()
		if r != nil {
			b.failPanic(r, debug.Stack())
		}
		b.mu.Lock()
		b.returned = true
		b.stopTimersLocked()
		b.mu.Unlock()
		b.cancel()
		if left := b.pending(); r == nil && len(left) > 0 {
			b.w.log.Warn("task returned leaving attempts pending; they are retried when their leases expire",
				"spec", b.attempts[0].Spec(), "pending", len(left))
		}
	}()
	task(b.ctx, b.attempts)
}

// failPanic fails every pending attempt with the panic, the stack and a
// Python-style traceback added to its data.
func (b *batch) failPanic(r any, stack []byte) {
	msg := fmt.Sprintf("%+v", r)
	b.w.log.Error("task panicked", "spec", b.attempts[0].Spec(), "panic", msg)
	b.each(func(ctx context.Context, a *Attempt) error {
		data := coordinate.WithTraceback(a.Data(), msg+"\n"+string(stack))
		data = coordinate.SetDataKey(data, "panic", coordinate.TextData(msg))
		data = coordinate.SetDataKey(data, "stack", coordinate.TextData(string(stack)))
		return a.Fail(ctx, data)
	})
}

// expire fails the attempts still pending after their lease (the failure
// deadline), and cancels the task if that has not happened yet.
func (b *batch) expire() {
	b.cancel()
	b.w.log.Warn("task did not finish its attempts in time; failing them", "spec", b.attempts[0].Spec())
	b.each(func(ctx context.Context, a *Attempt) error {
		return a.FailWith(ctx, fmt.Errorf("worker %s: the task did not finish the attempt before its lease expired", b.w.cfg.ID))
	})
}

// giveBack cancels the task and gives its pending attempts back for
// another worker to retry (a stop that ran out of time).
func (b *batch) giveBack() {
	b.cancel()
	b.each(func(ctx context.Context, a *Attempt) error { return a.Retry(ctx, nil) })
}

// each applies f to every pending attempt with a bounded context, logging
// failures (a lost lease is expected after expiry).
func (b *batch) each(f func(ctx context.Context, a *Attempt) error) {
	for _, a := range b.pending() {
		ctx, cancel := context.WithTimeout(b.w.baseCtx, updateTimeout)
		if err := f(ctx, a); err != nil {
			b.w.log.Warn("updating attempt", "unit", a.String(), "err", err)
		}
		cancel()
	}
}
