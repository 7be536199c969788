package postgres

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/coordinated/coordinated/internal/replyhold"
)

// Held updates (internal/replyhold). An update_work_unit whose request
// lets its reply be held does not wait for the committer: it is queued
// and the call returns; the committer worker that commits its batch (or
// fails it) calls the reply's callback, which builds and writes the
// reply. The connection's goroutine is then not put to sleep and woken
// once per update, which was part of every finish's trip at 8 connections
// (docs/postgres.md, "Seventh pass: held replies").

// heldUpdate is what a commitItem holds for an update whose caller did
// not wait.
type heldUpdate struct {
	on    bool
	watch *watcher // the call's liveness watch, ended with the outcome; may be nil
	// settled: the outcome is decided, by the committer's answer or by
	// the watch finding the database stalled, whichever comes first.
	settled atomic.Bool
	err     error       // the outcome (settle), read by await when it comes first
	notify  func(error) // await's callback
}

// update applies r, an UpdateWorkUnit or UpdateAttempt, under the call's
// liveness watch (live nil: none). When the request of ctx lets its reply
// be held, r is queued and update returns nil at once, having handed
// replyhold the function that registers the reply's callback (await);
// otherwise, or if r cannot be queued, it waits and returns r's outcome
// as before.
func (c *committer) update(ctx context.Context, live *liveness, r *updateRequest) error {
	ctx, w := live.watchCall(ctx)
	if !replyhold.CanDefer(ctx) {
		return w.finish(c.submit(ctx, &commitItem{upd: r}))
	}
	r.keep()
	it := &commitItem{upd: r}
	it.held.on, it.held.watch = true, w
	if err := c.push(ctx, it); err != nil {
		return w.finish(err)
	}
	// A stalled database fails the call within the request timeout as
	// if it had waited (liveness.go); the update stays queued and is
	// applied if the database comes back, as an abandoned one is.
	if w != nil {
		w.onStall(func() { it.settle(ctx.Err()) })
	}
	replyhold.Defer(ctx, it.await)
	return nil
}

// keep makes r independent of the caller's memory, which is the
// request's: the server reuses it for its next request once the handler
// returns, long before a held update is applied. Strings are copies
// already; the data and what the pointers point to are copied here.
func (r *updateRequest) keep() {
	u := &r.upd
	if u.Data != nil {
		u.Data = slices.Clone(u.Data)
	}
	if u.LeaseTime != nil {
		d := *u.LeaseTime
		u.LeaseTime = &d
	}
	if u.Worker != nil {
		n := *u.Worker
		u.Worker = &n
	}
}

// settle decides a held update's outcome, once: it ends the call's watch
// with it and hands it to the callback, or leaves it for await if that
// has not registered one yet. On a committer worker it must not block,
// and does not: the callback writes its reply without blocking
// (replyhold.Defer).
func (it *commitItem) settle(err error) {
	h := &it.held
	if !h.settled.CompareAndSwap(false, true) {
		return
	}
	err = h.watch.finish(err)
	h.err = err
	if !it.state.CompareAndSwap(itemWaiting, itemAnswered) {
		h.notify(err) // itemAwaited: await came first
	}
}

// await registers the held update's callback: settle calls it, or await
// does at once when the outcome is already known. Exactly one of the two
// moves the state on from itemWaiting; the other calls done.
func (it *commitItem) await(done func(error)) {
	it.held.notify = done
	if !it.state.CompareAndSwap(itemWaiting, itemAwaited) {
		done(it.held.err)
	}
}
