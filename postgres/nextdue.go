package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

var nextDueSQL = namedSQL("next_due")

var _ coordinate.DueReporter = (*watchedNamespace)(nil)

func (w *watchedNamespace) NextDue(ctx context.Context, after time.Time) (time.Time, bool, error) {
	type due struct {
		t  time.Time
		ok bool
	}
	d, err := watched(w, ctx, func(ctx context.Context) (due, error) {
		t, ok, err := w.ns.nextDue(ctx, after)
		return due{t, ok}, err
	})
	return d.t, d.ok, err
}

// nextDue answers coordinate.DueReporter: when, after after, a delayed
// unit of the namespace becomes available or a lease runs out
// (sql/getwork.sql).
func (ns *namespace) nextDue(ctx context.Context, after time.Time) (time.Time, bool, error) {
	var at *int64
	if err := ns.b.pool.QueryRow(ctx, nextDueSQL, ns.id, after.UnixNano()).Scan(&at); err != nil {
		return time.Time{}, false, fmt.Errorf("postgres namespace %q: next due: %w", ns.name, err)
	}
	if at == nil {
		return time.Time{}, false, nil
	}
	return time.Unix(0, *at), true, nil
}
