package jobserver

import (
	"context"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
)

// Long-poll for idle Go workers (docs/compat.md, "Go workers"): get_work
// with option `wait` (seconds, at most MaxGetWorkWait) that finds no work
// waits until a change may have made some available, or the wait ends,
// and tries again. The changes that wake waiters: add_work_units,
// set_work_spec, control_work_spec, worker_unregister (which may end a
// dead worker's leases), and an update_work_unit that gives a unit back
// (status AVAILABLE) or finishes one with output to chain, made through
// this daemon or, on a namespace shared with other daemons
// (coordinate.SharedWork: a PostgreSQL database), through another one
// while this one's calls wait (FollowSharedWork). Where the namespace can
// tell when work next becomes available by time alone
// (coordinate.DueReporter: both backends), the call also tries again
// then: a delay ending, a lease running out. A namespace that says when
// its changes made units available (coordinate.WorkNotifier: the memory
// backend for every such change and for a max_running slot freed,
// PostgreSQL for dependents a finish unblocked and for a max_running slot
// an update it committed freed) wakes the waiters for them. Units that
// become available otherwise (on PostgreSQL, a slot freed in a spec whose
// max_running its scheduler's reads have not seen) are found at the end
// of the wait.
// A waiter woken for nothing it can take ignores wakes for wakeHoldoff, so
// a stream of changes to specs it cannot run costs each waiter at most
// one get_work per holdoff. Requests of one connection are answered in
// order, so each connection has at most one waiting get_work, which stops
// waiting when its client hangs up (cborrpc.PeerGone); at most
// maxWaiters wait at once daemon-wide (more are answered at once);
// StopWaiting, at shutdown, answers them all.

// MaxGetWorkWait is the longest get_work `wait` honoured.
const MaxGetWorkWait = 30 * time.Second

// maxWaiters bounds the get_work calls waiting at once.
const maxWaiters = 16384

// wakeMethods are the methods after whose success waiting get_work calls
// try again (update_work_unit wakes them itself, for some updates only:
// updateAnswer).
var wakeMethods = []string{"add_work_units", "set_work_spec", "control_work_spec", "worker_unregister"}

// wakeHoldoff is how long a waiter woken for nothing ignores wakes.
const wakeHoldoff = 50 * time.Millisecond

// waitList is a broadcast: waiters take the current channel, a change
// closes it and starts a new one.
type waitList struct {
	mu      sync.Mutex
	ch      chan struct{}
	n       int
	stopped bool
}

func newWaitList() *waitList { return &waitList{ch: make(chan struct{})} }

// enter registers a waiter and returns the channel to wait on, or false
// when the daemon is stopping or full.
func (w *waitList) enter() (<-chan struct{}, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.n >= maxWaiters {
		return nil, false
	}
	w.n++
	return w.ch, true
}

// again returns the current channel for a waiter already entered, or false
// when the daemon is stopping.
func (w *waitList) again() (<-chan struct{}, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch, !w.stopped
}

func (w *waitList) leave() {
	w.mu.Lock()
	w.n--
	w.mu.Unlock()
}

// waiting reports whether any get_work is waiting.
func (w *waitList) waiting() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n > 0
}

// wake wakes every waiter.
func (w *waitList) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 || w.stopped {
		return
	}
	close(w.ch)
	w.ch = make(chan struct{})
}

// stop wakes every waiter for good.
func (w *waitList) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.stopped = true
		close(w.ch)
	}
}

// StopWaiting answers every waiting get_work now (with what it can find)
// and makes later ones answer at once: call it when shutting down.
func (js *JobServer) StopWaiting() { js.waits.stop() }

// FollowSharedWork wakes the waiting get_work calls when another daemon
// sharing the namespace announces work, until ctx ends; it returns at once
// when the namespace is not shared.
func (js *JobServer) FollowSharedWork(ctx context.Context) {
	if js.shared != nil {
		js.shared.WatchWork(ctx, js.waits.wake)
	}
}

// workMayBeAvailable wakes this daemon's waiting calls and tells the
// other daemons' (coordinate.SharedWork).
func (js *JobServer) workMayBeAvailable() {
	js.waits.wake()
	if js.shared != nil {
		js.shared.AnnounceWork()
	}
}

// someoneWaits reports whether a get_work waits here or, on a shared
// namespace, in another daemon.
func (js *JobServer) someoneWaits() bool {
	return js.waits.waiting() || js.shared != nil && js.shared.OthersWaiting()
}

// wakeWaitersAfter wraps the methods that may make work available.
func (js *JobServer) wakeWaitersAfter(m map[string]method) {
	for _, name := range wakeMethods {
		mt := m[name]
		run := mt.run
		mt.run = func(ctx context.Context, p []cbor.RawMessage) (any, error) {
			res, err := run(ctx, p)
			if err == nil {
				js.workMayBeAvailable()
			}
			return res, err
		}
		m[name] = mt
	}
}

// updateMakesWork reports whether an update may make work available: a
// unit given back, or finished with output that chains units.
func updateMakesWork(upd coordinate.WorkUnitUpdate) bool {
	return upd.Status == coordinate.StatusAvailable ||
		upd.Status == coordinate.StatusFinished && upd.Data != nil && len(coordinate.ChainedInputs(upd.Data)) > 0
}

// getWorkWaiting is GetWork for a request with a `wait`: it tries, and
// while it finds nothing waits for a change or the end of the wait.
func (js *JobServer) getWorkWaiting(ctx context.Context, req coordinate.WorkRequest, wait time.Duration) ([]coordinate.Attempt, error) {
	ch, ok := js.waits.enter()
	if !ok {
		return js.ns.GetWork(ctx, req)
	}
	defer js.waits.leave()
	if js.shared != nil {
		js.shared.Waiting(wait)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	// A client that hangs up while its call waits ends the wait, so its
	// place among the waiters is not held for the rest of it. The watch
	// starts with the first wait: a call that finds work at once pays
	// nothing for it.
	var gone <-chan struct{}
	stopWatch := func() {}
	defer func() { stopWatch() }()
	for first := true; ; first = false {
		// The channel is taken before trying, so a change made while
		// GetWork runs is not missed; so is the time, so a delay ending
		// while it runs is not either.
		tried := js.clock.Now()
		as, err := js.ns.GetWork(ctx, req)
		if err != nil || len(as) > 0 {
			return as, err
		}
		if first {
			gone, stopWatch = cborrpc.PeerGone(ctx)
		}
		due, stopDue := js.dueTimer(ctx, tried)
		select {
		case <-ch:
		case <-due:
		case <-timer.C:
			stopDue()
			return js.ns.GetWork(ctx, req)
		case <-ctx.Done():
			stopDue()
			return as, nil
		case <-gone:
			stopDue()
			return js.clientGone()
		}
		stopDue()
		if ch, ok = js.waits.again(); !ok {
			return js.ns.GetWork(ctx, req)
		}
		if !first {
			// The last wake found nothing: hold off before trying
			// again (a wake meanwhile is kept in ch).
			hold := time.NewTimer(wakeHoldoff)
			select {
			case <-hold.C:
			case <-timer.C:
				hold.Stop()
				return js.ns.GetWork(ctx, req)
			case <-ctx.Done():
				hold.Stop()
				return as, nil
			case <-gone:
				hold.Stop()
				return js.clientGone()
			}
		}
	}
}

// dueTimer fires when the namespace next has work due by time alone after
// tried, the last try (coordinate.DueReporter: a delay ending, a lease
// running out), on the server's clock, so a waiting call tries again
// then. It never fires when the namespace cannot tell or nothing is due;
// a time already past fires at once (the caller's holdoff bounds how
// often that repeats).
func (js *JobServer) dueTimer(ctx context.Context, tried time.Time) (<-chan struct{}, func()) {
	dr, ok := js.ns.(coordinate.DueReporter)
	if !ok {
		return nil, func() {}
	}
	t, ok, err := dr.NextDue(ctx, tried)
	if err != nil || !ok {
		return nil, func() {}
	}
	fired := make(chan struct{})
	d, fire := t.Sub(js.clock.Now()), func() { close(fired) }
	if c, ok := js.clock.(timerClock); ok {
		stop := c.AfterFunc(d, fire)
		return fired, func() { stop() }
	}
	timer := time.AfterFunc(d, fire)
	return fired, func() { timer.Stop() }
}

// clientGone answers a waiting get_work whose client hung up: with no
// work, which nobody reads.
func (js *JobServer) clientGone() ([]coordinate.Attempt, error) {
	js.log.Debug("get_work: the client closed the connection while the call waited")
	return nil, nil
}

// timerClock is a coordinate.Clock with timers (coordinate.SystemClock and
// FakeClock are).
type timerClock interface {
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}
