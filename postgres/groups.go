package postgres

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/coordinated/coordinated/coordinate"
)

// The statements, from sql/groups.sql.
var (
	groupCountsSQL          = namedSQL("group_counts")
	groupLastProgressSQL    = namedSQL("group_last_progress")
	groupsStalledSQL        = namedSQL("groups_stalled")
	groupUnfinishedUnitsSQL = namedSQL("group_unfinished_units")
	unitsFailWithDataSQL    = namedSQL("units_fail_with_data")
)

// Groups (docs/dependencies.md): a unit's group is the work_unit.grp column; unit_group
// remembers when a unit of each group last changed status, for the stall
// watchdog.

// groupRef names one group.
type groupRef struct {
	ns   int64
	name string
}

//go:embed queries/group_progress.sql
var groupProgressSQL string

// groupBumps collects the groups whose units changed status in a
// transaction, with the time.
type groupBumps map[groupRef]time.Time

// bump records progress of group name (nothing for "" or NULL).
func (g groupBumps) bump(ns int64, name []byte, now time.Time) {
	if len(name) == 0 {
		return
	}
	k := groupRef{ns, string(name)}
	if now.After(g[k]) {
		g[k] = now
	}
}

func (g groupBumps) statement() (string, []any) {
	if len(g) == 0 {
		return "", nil
	}
	nss := make([]int64, 0, len(g))
	names := make([][]byte, 0, len(g))
	ts := make([]int64, 0, len(g))
	for k, t := range g {
		nss = append(nss, k.ns)
		names = append(names, []byte(k.name))
		ts = append(ts, t.UnixNano())
	}
	return groupProgressSQL, []any{nss, names, ts}
}

func (g groupBumps) apply(ctx context.Context, tx dbtx) error {
	sql, args := g.statement()
	if sql == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("postgres group progress: %w", err)
	}
	return nil
}

func (g groupBumps) queue(b *pgx.Batch) {
	if sql, args := g.statement(); sql != "" {
		b.Queue(sql, args...)
	}
}

func (ns *namespace) GroupStatus(ctx context.Context, group string) (*coordinate.GroupStatus, error) {
	now := ns.now()
	if err := ns.b.expireLeases(ctx, now); err != nil {
		return nil, err
	}
	gs := &coordinate.GroupStatus{Group: group, Counts: map[coordinate.Status]int{}}
	rows, err := ns.b.pool.Query(ctx, groupCountsSQL, ns.id, bytesOf(group), now.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("postgres group status %q: %w", group, err)
	}
	var (
		status         int16
		n, nDelayed    int64
		ended          pgtype.Int8
		delayed        int64
		lastDelayEnded int64
	)
	if _, err := pgx.ForEachRow(rows, []any{&status, &n, &nDelayed, &ended}, func() error {
		gs.Counts[coordinate.Status(status)] = int(n)
		delayed += nDelayed
		if ended.Valid {
			lastDelayEnded = max(lastDelayEnded, ended.Int64)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("postgres group status %q: %w", group, err)
	}
	// An emptied group reports no last progress: the memory backend
	// drops it with its last member.
	if len(gs.Counts) > 0 {
		var last int64
		err = ns.b.pool.QueryRow(ctx, groupLastProgressSQL, ns.id, bytesOf(group)).Scan(&last)
		switch {
		case errNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("postgres group status %q: %w", group, err)
		default:
			// A delay that ended is progress as of its end.
			gs.LastProgress = time.Unix(0, max(last, lastDelayEnded)).UTC()
		}
	}
	unfinished := gs.Counts[coordinate.StatusAvailable] + gs.Counts[coordinate.StatusBlocked] + gs.Counts[coordinate.StatusPending]
	gs.Complete = unfinished == 0
	// Stalled: runnable units (AVAILABLE, no delay left) and no progress
	// for the stall timeout.
	gs.Stalled = int64(gs.Counts[coordinate.StatusAvailable]) > delayed && !gs.LastProgress.IsZero() &&
		now.Sub(gs.LastProgress) >= ns.b.opts.StallTimeout
	return gs, nil
}

// StalledGroups finds the groups whose last progress is older than the
// stall timeout and that still have AVAILABLE units, through the unit_group
// table and the work_unit_group index (never a scan of all units).
func (ns *namespace) StalledGroups(ctx context.Context) ([]*coordinate.GroupStatus, error) {
	now := ns.now()
	if err := ns.b.expireLeases(ctx, now); err != nil {
		return nil, err
	}
	rows, err := ns.b.pool.Query(ctx, groupsStalledSQL, ns.id, now.Add(-ns.b.opts.StallTimeout).UnixNano(), now.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("postgres stalled groups: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("postgres stalled groups: %w", err)
	}
	out := make([]*coordinate.GroupStatus, 0, len(names))
	for _, name := range names {
		gs, err := ns.GroupStatus(ctx, string(name))
		if err != nil {
			return nil, err
		}
		if gs.Stalled {
			out = append(out, gs)
		}
	}
	return out, nil
}

func (ns *namespace) CancelGroup(ctx context.Context, group string) (int, error) {
	now := ns.now()
	if err := ns.b.expireLeases(ctx, now); err != nil {
		return 0, err
	}
	var cancelled int
	err := ns.b.inTxCounted(ctx, func(tx pgx.Tx, d countDelta) error {
		cancelled = 0
		rows, err := tx.Query(ctx, groupUnfinishedUnitsSQL, ns.id, bytesOf(group))
		if err != nil {
			return err
		}
		var (
			units  rowKeys
			datas  [][]byte
			failed []unitKey
			spec   int64
			sname  []byte
			key    []byte
			data   []byte
			status int16
		)
		if _, err := pgx.ForEachRow(rows, []any{&spec, &sname, &key, &data, &status}, func() error {
			d.move(spec, coordinate.Status(status), coordinate.StatusFailed)
			units.add(spec, key)
			datas = append(datas, coordinate.WithTraceback(data, coordinate.TracebackCancelled))
			failed = append(failed, unitKey{ns.id, string(sname), string(key)})
			return nil
		}); err != nil {
			return err
		}
		if units.len() == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, unitsFailWithDataSQL, units.specs, units.keys, now.UnixNano(), datas); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, unlistSQL, units.specs, units.keys); err != nil {
			return err
		}
		g := groupBumps{}
		g.bump(ns.id, []byte(group), now)
		if err := propagateFailures(ctx, tx, now, failed, nil, d, g); err != nil {
			return err
		}
		cancelled = units.len()
		if err := d.apply(ctx, tx); err != nil {
			return err
		}
		return g.apply(ctx, tx)
	})
	if err != nil {
		return 0, fmt.Errorf("postgres cancel group %q: %w", group, err)
	}
	return cancelled, nil
}
