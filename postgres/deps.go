package postgres

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// The statements, from sql/deps.sql.
var (
	depsPendingSQL              = namedSQL("deps_pending")
	depsLockDependentsSQL       = namedSQL("deps_lock_dependents")
	depsDependentsUnfinishedSQL = namedSQL("deps_dependents_unfinished")
	unitsFailDependentsSQL      = namedSQL("units_fail_dependents")
	depsUnfailSQL               = namedSQL("deps_unfail")
	depsDependentsOfSQL         = namedSQL("deps_dependents_of")
	depsOfUnitsSQL              = namedSQL("deps_of_units")
)

// Work-unit dependencies (docs/dependencies.md, DECISIONS §9). unit_dep holds each
// unit's dependencies that are not FINISHED yet. A unit with edges is
// BLOCKED; when a dependency finishes its edges go and dependents left
// without edges become AVAILABLE; when one fails (or is deleted) its
// dependents fail too, transitively, and are marked dep_failed; retrying
// the failed unit blocks those dependents again.

// unitKey names a unit of a namespace.
type unitKey struct {
	ns        int64
	spec, key string
}

func (k unitKey) ref() coordinate.UnitRef { return coordinate.UnitRef{Spec: k.spec, Key: k.key} }

// less orders units by namespace, spec, key: the order in which batches
// lock units, so concurrent batches lock in the same order.
func (k unitKey) less(o unitKey) bool {
	if k.ns != o.ns {
		return k.ns < o.ns
	}
	if k.spec != o.spec {
		return k.spec < o.spec
	}
	return k.key < o.key
}

// resolveFinishedSQL resolves the edges to finished units (its file says
// how).
//
//go:embed queries/resolve_finished.sql
var resolveFinishedSQL string

// queueResolveFinished queues resolveFinishedSQL for units that may have
// finished; now is in nanoseconds. It returns the queued statement, or
// nil when there was nothing to resolve.
func queueResolveFinished(b *pgx.Batch, finished []unitKey, now int64) *pgx.QueuedQuery {
	if len(finished) == 0 {
		return nil
	}
	nss, specs, keys := unitKeyArrays(finished)
	return b.Queue(resolveFinishedSQL, nss, specs, keys, now)
}

// unitKeyArrays splits keys into the namespace, spec and key arrays the
// queries unnest; the names go as bytea[] without a copy each
// (pgarrays.go).
func unitKeyArrays(keys []unitKey) (nss []int64, specs, ks []string) {
	nss = make([]int64, len(keys))
	specs = make([]string, len(keys))
	ks = make([]string, len(keys))
	for i, k := range keys {
		nss[i], specs[i], ks[i] = k.ns, k.spec, k.key
	}
	return nss, specs, ks
}

// withDependents returns the units of keys that some unit depends on, in
// the order given, with one query.
func withDependents(ctx context.Context, tx dbtx, keys []unitKey) ([]unitKey, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	nss, specs, ks := unitKeyArrays(keys)
	rows, err := tx.Query(ctx, depsPendingSQL, nss, specs, ks)
	if err != nil {
		return nil, err
	}
	var out []unitKey
	var i int64
	_, err = pgx.ForEachRow(rows, []any{&i}, func() error {
		out = append(out, keys[i-1])
		return nil
	})
	return out, err
}

// propagateFailures fails the unfinished dependents of the units in
// failed (transitively), and blocks again the dep_failed dependents of the
// units in unfailed (retried after failing) that have no other failed
// dependency (transitively). Each step locks the dependents first, in a
// statement of its own (lockDependents), before reading them.
func propagateFailures(ctx context.Context, tx dbtx, now time.Time, failed, unfailed []unitKey, d countDelta, g groupBumps) error {
	seen := map[unitKey]bool{}
	// Dependents failed transitively name the unit whose failure started it.
	type failure struct{ unit, root unitKey }
	var queue []failure
	for _, f := range failed {
		queue = append(queue, failure{f, f})
	}
	for len(queue) > 0 {
		r, root := queue[0].unit, queue[0].root
		queue = queue[1:]
		if seen[r] {
			continue
		}
		seen[r] = true
		if err := lockDependents(ctx, tx, r); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, depsDependentsUnfinishedSQL, r.ns, bytesOf(r.spec), bytesOf(r.key))
		if err != nil {
			return err
		}
		var (
			units     rowKeys
			datas     [][]byte
			spec      int64
			name, key []byte
			data, grp []byte
			status    int16
			traceback = coordinate.DependencyFailedTraceback(root.ref())
		)
		if _, err := pgx.ForEachRow(rows, []any{&spec, &name, &key, &data, &status, &grp}, func() error {
			units.add(spec, key)
			datas = append(datas, coordinate.WithTraceback(data, traceback))
			d.move(spec, coordinate.Status(status), coordinate.StatusFailed)
			g.bump(r.ns, grp, now)
			queue = append(queue, failure{unitKey{r.ns, string(name), string(key)}, root})
			return nil
		}); err != nil {
			return err
		}
		if units.len() == 0 {
			continue
		}
		if _, err := tx.Exec(ctx, unitsFailDependentsSQL,
			units.specs, units.keys, now.UnixNano(), datas); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, unlistSQL, units.specs, units.keys); err != nil {
			return err
		}
	}
	clear(seen)
	for len(unfailed) > 0 {
		r := unfailed[0]
		unfailed = unfailed[1:]
		if seen[r] {
			continue
		}
		seen[r] = true
		// Dependents failed because of r, with no other failed dependency.
		if err := lockDependents(ctx, tx, r); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, depsUnfailSQL, r.ns, bytesOf(r.spec), bytesOf(r.key))
		if err != nil {
			return err
		}
		var (
			spec      int64
			name, key []byte
			grp       []byte
		)
		if _, err := pgx.ForEachRow(rows, []any{&spec, &name, &key, &grp}, func() error {
			d.move(spec, coordinate.StatusFailed, coordinate.StatusBlocked)
			g.bump(r.ns, grp, now)
			unfailed = append(unfailed, unitKey{r.ns, string(name), string(key)})
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// lockDependents locks the units depending on r (sql/deps.sql says why it
// is a statement of its own).
func lockDependents(ctx context.Context, tx dbtx, r unitKey) error {
	_, err := tx.Exec(ctx, depsLockDependentsSQL, r.ns, bytesOf(r.spec), bytesOf(r.key))
	return err
}

// checkCycles fails with coordinate.ErrCycle when giving the units of
// batch (unit -> its new dependencies, replacing its current ones) would
// close a dependency cycle. order lists the batch units in input order.
// It loads the stored reverse edges downstream of the batch, one query per
// level (normally one query: nothing waits on units being added), and
// searches them with coordinate.FindCycle, as the memory backend does.
func checkCycles(ctx context.Context, tx dbtx, nsID int64, batch map[coordinate.UnitRef][]coordinate.UnitRef, order []coordinate.UnitRef) error {
	waiters := map[coordinate.UnitRef][]coordinate.UnitRef{}
	loaded := map[coordinate.UnitRef]bool{}
	frontier := slices.Clone(order)
	for len(frontier) > 0 {
		var specs, keys [][]byte
		for _, r := range frontier {
			if loaded[r] {
				continue
			}
			loaded[r] = true
			specs = append(specs, bytesOf(r.Spec))
			keys = append(keys, bytesOf(r.Key))
		}
		frontier = frontier[:0]
		if len(specs) == 0 {
			break
		}
		rows, err := tx.Query(ctx, depsDependentsOfSQL, nsID, specs, keys)
		if err != nil {
			return err
		}
		var dspec, dkey, spec, key []byte
		if _, err := pgx.ForEachRow(rows, []any{&dspec, &dkey, &spec, &key}, func() error {
			target := coordinate.UnitRef{Spec: string(dspec), Key: string(dkey)}
			waiter := coordinate.UnitRef{Spec: string(spec), Key: string(key)}
			waiters[target] = append(waiters[target], waiter)
			frontier = append(frontier, waiter)
			return nil
		}); err != nil {
			return err
		}
	}
	cycle := coordinate.FindCycle(order, batch, func(r coordinate.UnitRef) []coordinate.UnitRef { return waiters[r] })
	if cycle != nil {
		return coordinate.CycleError(cycle)
	}
	return nil
}

// fillDependencies sets DependsOn on the listed units (of spec specID)
// that have edges.
func (ns *namespace) fillDependencies(ctx context.Context, specID int64, units []*coordinate.WorkUnit, rows []unitRow) error {
	var keys [][]byte
	byKey := map[string]*coordinate.WorkUnit{}
	for i := range rows {
		if rows[i].hasDeps {
			keys = append(keys, bytesOf(units[i].Key.Bytes))
			byKey[units[i].Key.Bytes] = units[i]
		}
	}
	if len(keys) == 0 {
		return nil
	}
	rs, err := ns.b.pool.Query(ctx, depsOfUnitsSQL, specID, keys)
	if err != nil {
		return fmt.Errorf("postgres unit dependencies: %w", err)
	}
	var unit, spec, key []byte
	_, err = pgx.ForEachRow(rs, []any{&unit, &spec, &key}, func() error {
		u := byKey[string(unit)]
		u.DependsOn = append(u.DependsOn, coordinate.UnitRef{Spec: string(spec), Key: string(key)})
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres unit dependencies: %w", err)
	}
	return nil
}
