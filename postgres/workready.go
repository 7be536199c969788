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

// Also a max_running slot freed: an update this daemon committed that
// ended a lease (a finish, a failure, a give-back, a lease ended at once)
// of a spec with max_running may let a waiting get_work take the next
// unit. The daemon knows which specs have max_running from its
// scheduler's reads (specrows.go): a get_work that found a spec at its
// max_running read its row there, so no SQL is added to the finish for
// this; a spec that lost its max_running since makes a wake for nothing.

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

// freedSlots notes the namespaces where an update of batch that is done
// (committed, results[i] nil, not left to the general path: again) ended
// a lease of a spec with max_running, so a slot may have freed.
func freedSlots(batch []*commitItem, results []error, again []bool, into *[]int64) {
	for i, it := range batch {
		u := it.upd
		if u == nil || results[i] != nil || (i < len(again) && again[i]) || !u.endsLease() {
			continue
		}
		if u.ns.specRows.isCapped(u.spec) {
			*into = append(*into, u.ns.id)
		}
	}
}

// endsLease reports whether r, applied, ends the lease of a PENDING unit.
func (r *updateRequest) endsLease() bool {
	s := r.upd.Status
	return (s != 0 && s != coordinate.StatusPending) || (r.upd.LeaseTime != nil && *r.upd.LeaseTime <= 0)
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
// finish committed by this daemon unblocked dependents in the namespace,
// or an update it committed ended a lease of a spec with max_running.
func (w *watchedNamespace) NotifyWork(f func()) { w.ns.b.workReady.add(w.ns.id, f) }
