package postgres

import (
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/coordinated/coordinated/coordinate"
)

// Units made AVAILABLE inside a finish's transaction (coordinate.WorkNotifier):
// the dependents a finish unblocks (resolve_finished.sql). The daemon's
// methods cannot see them, so without this a long-polling get_work would
// find them only at the end of its wait. The statement answers a row only
// when some unit it was given has dependents, so its row count, taken
// when the batch finished some unit, says "units may have become
// available" at no cost (a dependent still waiting for another unit makes
// a wake for nothing, which the waiters' holdoff bounds); the committer
// calls the namespace's listeners once the transaction has committed.

// workListeners are the NotifyWork callbacks by namespace id.
type workListeners struct {
	mu sync.Mutex
	fs map[int64][]func()
}

func (w *workListeners) add(ns int64, f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fs == nil {
		w.fs = map[int64][]func(){}
	}
	w.fs[ns] = append(slices.Clip(w.fs[ns]), f)
}

// ready calls the listeners of each namespace in nss (repeats allowed).
func (w *workListeners) ready(nss []int64) {
	if len(nss) == 0 {
		return
	}
	slices.Sort(nss)
	nss = slices.Compact(nss)
	w.mu.Lock()
	var call []func()
	for _, ns := range nss {
		call = append(call, w.fs[ns]...)
	}
	w.mu.Unlock()
	for _, f := range call {
		f()
	}
}

// resolvedReady notes the namespaces of finished, the units the batch
// finished, when resolveFinishedSQL's command tag says some unit given to
// it has dependents.
func resolvedReady(ct pgconn.CommandTag, finished []unitKey, into *[]int64) {
	if ct.RowsAffected() == 0 {
		return
	}
	for _, u := range finished {
		*into = append(*into, u.ns)
	}
}

// onResolved arranges for q's tag to be noted by resolvedReady when the
// batch holding q closes (pgx runs the callback then). q may be nil
// (nothing was queued).
func onResolved(q *pgx.QueuedQuery, finished []unitKey, into *[]int64) {
	if q == nil {
		return
	}
	q.Exec(func(ct pgconn.CommandTag) error {
		resolvedReady(ct, finished, into)
		return nil
	})
}

var _ coordinate.WorkNotifier = (*watchedNamespace)(nil)

// NotifyWork registers f (coordinate.WorkNotifier): it is called after a
// finish committed by this daemon unblocked dependents in the namespace.
func (w *watchedNamespace) NotifyWork(f func()) { w.ns.b.workReady.add(w.ns.id, f) }
