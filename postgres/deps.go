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

// propagateFailures fails the unfinished dependents of the units in
// failed (transitively), and blocks again the dep_failed dependents of the
// units in unfailed (retried after failing) that have no other failed
// dependency (transitively). It goes one level of the dependency graph at
// a time, one round trip per level: each level locks the dependents of
// the units reached (deps_lock_dependents, sql/deps.sql says why in a
// statement of its own) before reading them in the next statement.
func propagateFailures(ctx context.Context, tx dbtx, now time.Time, failed, unfailed []unitKey, d countDelta, g groupBumps) error {
	if err := failDependents(ctx, tx, now, failed, d, g); err != nil {
		return err
	}
	return unfailDependents(ctx, tx, now, unfailed, d, g)
}

// cascadeLevel is the units a failure cascade reached at one level, each
// with the failed unit it started from (named in the tracebacks of the
// units it reaches), and their failure, written by the batch that reads
// their dependents (none on the first level, whose units failed before).
type cascadeLevel struct {
	units, roots []unitKey
	fail         rowKeys
	datas        [][]byte
}

// failDependents fails the unfinished dependents of failed, level by
// level: one batch writes the failure of the level's units, then locks
// and reads their dependents, the next level. A unit reached from two
// units of a level names the root of the first.
func failDependents(ctx context.Context, tx dbtx, now time.Time, failed []unitKey, d countDelta, g groupBumps) error {
	seen := map[unitKey]bool{}
	var level cascadeLevel
	for _, f := range failed {
		if !seen[f] {
			seen[f] = true
			level.units = append(level.units, f)
			level.roots = append(level.roots, f)
		}
	}
	for len(level.units) > 0 || level.fail.len() > 0 {
		var (
			b    pgx.Batch
			next cascadeLevel
		)
		if level.fail.len() > 0 {
			b.Queue(unitsFailDependentsSQL, level.fail.specs, level.fail.keys, now.UnixNano(), level.datas)
			b.Queue(unlistSQL, level.fail.specs, level.fail.keys)
		}
		if len(level.units) > 0 {
			queueFailLevel(&b, level, &next, seen, now, d, g)
		}
		if err := sendLevel(ctx, tx, &b, "failing dependents of", level.units); err != nil {
			return err
		}
		level = next
	}
	return nil
}

// queueFailLevel queues the statements that lock and read the unfinished
// dependents of level, and arranges for them to be noted in next (each
// once: seen) and in d and g as they are read.
func queueFailLevel(b *pgx.Batch, level cascadeLevel, next *cascadeLevel, seen map[unitKey]bool, now time.Time, d countDelta, g groupBumps) {
	nss, specs, keys := unitKeyArrays(level.units)
	b.Queue(depsLockDependentsSQL, nss, specs, keys)
	b.Queue(depsDependentsUnfinishedSQL, nss, specs, keys).Query(func(rows pgx.Rows) error {
		var (
			spec, i   int64
			name, key []byte
			data, grp []byte
			status    int16
		)
		_, err := pgx.ForEachRow(rows, []any{&spec, &name, &key, &data, &status, &grp, &i}, func() error {
			from, root := level.units[i-1], level.roots[i-1]
			next.fail.add(spec, key)
			next.datas = append(next.datas, coordinate.WithTraceback(data, coordinate.DependencyFailedTraceback(root.ref())))
			d.move(spec, coordinate.Status(status), coordinate.StatusFailed)
			g.bump(from.ns, grp, now)
			if u := (unitKey{from.ns, string(name), string(key)}); !seen[u] {
				seen[u] = true
				next.units = append(next.units, u)
				next.roots = append(next.roots, root)
			}
			return nil
		})
		return err
	})
}

// sendLevel sends the batch of one level of a cascade; an error names
// what it did and the first unit of the level.
func sendLevel(ctx context.Context, tx dbtx, b *pgx.Batch, what string, level []unitKey) error {
	err := tx.SendBatch(ctx, b).Close()
	if err != nil && len(level) > 0 {
		err = fmt.Errorf("%s %q/%q and %d other units: %w", what, level[0].spec, level[0].key, len(level)-1, err)
	}
	return err
}

// unfailDependents blocks again the dependents failed because a unit of
// unfailed failed, when no other dependency of theirs is FAILED, and
// theirs in turn, level by level: one batch locks the level's dependents
// and blocks again those it may.
func unfailDependents(ctx context.Context, tx dbtx, now time.Time, unfailed []unitKey, d countDelta, g groupBumps) error {
	seen := map[unitKey]bool{}
	var level []unitKey
	for _, u := range unfailed {
		if !seen[u] {
			seen[u] = true
			level = append(level, u)
		}
	}
	for len(level) > 0 {
		var (
			b    pgx.Batch
			next []unitKey
		)
		nss, specs, keys := unitKeyArrays(level)
		b.Queue(depsLockDependentsSQL, nss, specs, keys)
		b.Queue(depsUnfailSQL, nss, specs, keys).Query(func(rows pgx.Rows) error {
			var (
				spec, ns  int64
				name, key []byte
				grp       []byte
			)
			_, err := pgx.ForEachRow(rows, []any{&spec, &ns, &name, &key, &grp}, func() error {
				d.move(spec, coordinate.StatusFailed, coordinate.StatusBlocked)
				g.bump(ns, grp, now)
				if u := (unitKey{ns, string(name), string(key)}); !seen[u] {
					seen[u] = true
					next = append(next, u)
				}
				return nil
			})
			return err
		})
		if err := sendLevel(ctx, tx, &b, "blocking again dependents of", level); err != nil {
			return err
		}
		level = next
	}
	return nil
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
