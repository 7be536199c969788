package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/histo"
)

// The statements, from sql/stats.sql (workerUnitsSQL: sql/workers.sql).
var (
	statsSpecsSQL     = namedSQL("stats_specs")
	specsExistingSQL  = namedSQL("specs_existing")
	oldestAvailSQL    = namedSQL("stats_oldest_available")
	groupSpecsSQL     = namedSQL("group_specs")
	groupSpecUnitsSQL = namedSQL("group_spec_units")
	workerUnitsSQL    = namedSQL("worker_units")
)

// Monitoring: coordinate.StatsReader and GroupLister from the unit_count
// and archived_count tables (O(work specs) rows, never a scan of units),
// the pool's and the committer's figures.

var (
	_ coordinate.StatsReader      = (*namespace)(nil)
	_ coordinate.GroupLister      = (*namespace)(nil)
	_ coordinate.WorkerUnitLister = (*namespace)(nil)
)

// Stats implements coordinate.StatsReader. Events are the transitions
// this process committed (events.go); OldestAvailable comes from
// work_unit_available_since (migration 0009).
func (ns *namespace) Stats(ctx context.Context) (*coordinate.NamespaceStats, error) {
	now := ns.now()
	if err := ns.b.expireLeases(ctx, now); err != nil {
		return nil, err
	}
	if err := ns.b.pruneEvents(ctx); err != nil {
		return nil, err
	}
	rows, err := ns.b.pool.Query(ctx, statsSpecsSQL, ns.id)
	if err != nil {
		return nil, fmt.Errorf("postgres stats: %w", err)
	}
	out := &coordinate.NamespaceStats{}
	var (
		id             int64
		name           []byte
		text           bool
		paused, contin bool
		status         *int16
		n              *int64
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &name, &text, &paused, &contin, &status, &n}, func() error {
		if k := len(out.Specs); k == 0 || out.Specs[k-1].Name.Bytes != string(name) {
			out.Specs = append(out.Specs, coordinate.SpecStats{
				Name:   coordinate.Name{Bytes: string(name), Text: text},
				Paused: paused, Continuous: contin,
				Events: ns.b.events.read(id),
			})
		}
		if status != nil && n != nil && coordinate.Status(*status).Valid() {
			out.Specs[len(out.Specs)-1].Counts[*status] += int(*n)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("postgres stats: %w", err)
	}
	oldest, err := ns.oldestAvailable(ctx, now)
	if err != nil {
		return nil, err
	}
	for i := range out.Specs {
		out.Specs[i].OldestAvailable = oldest[out.Specs[i].Name.Bytes]
	}
	return out, nil
}

// oldestAvailable returns, by spec name, when the unit of each spec that
// has been runnable AVAILABLE the longest became so: units AVAILABLE since
// before migration 0009 count from this backend's start; a spec whose
// earliest time is after now has only delayed units.
func (ns *namespace) oldestAvailable(ctx context.Context, now time.Time) (map[string]time.Time, error) {
	rows, err := ns.b.pool.Query(ctx, oldestAvailSQL, ns.id)
	if err != nil {
		return nil, fmt.Errorf("postgres stats: oldest available: %w", err)
	}
	out := map[string]time.Time{}
	var (
		name  []byte
		since *int64
	)
	if _, err := pgx.ForEachRow(rows, []any{&name, &since}, func() error {
		t := ns.b.started
		if since != nil {
			t = time.Unix(0, *since)
		}
		if !t.After(now) {
			out[string(name)] = t
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("postgres stats: oldest available: %w", err)
	}
	return out, nil
}

// pruneEvents drops the transition counters of deleted specs once they
// fill the bound (events.go).
func (b *Backend) pruneEvents(ctx context.Context) error {
	ids, full := b.events.full()
	if !full {
		return nil
	}
	rows, err := b.pool.Query(ctx, specsExistingSQL, ids)
	if err != nil {
		return fmt.Errorf("postgres stats: %w", err)
	}
	live := make(map[int64]bool, len(ids))
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error {
		live[id] = true
		return nil
	}); err != nil {
		return fmt.Errorf("postgres stats: %w", err)
	}
	b.events.drop(ids, live)
	return nil
}

// GroupUnits implements coordinate.GroupLister through the work_unit_group
// index.
func (ns *namespace) GroupUnits(ctx context.Context, group string, limit int) ([]*coordinate.WorkUnit, bool, error) {
	if err := ns.b.expireLeases(ctx, ns.now()); err != nil {
		return nil, false, err
	}
	rows, err := ns.b.pool.Query(ctx, groupSpecsSQL, ns.id, bytesOf(group))
	if err != nil {
		return nil, false, fmt.Errorf("postgres group units %q: %w", group, err)
	}
	specs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (specRow, error) { return scanSpec(r) })
	if err != nil {
		return nil, false, fmt.Errorf("postgres group units %q: %w", group, err)
	}
	var out []*coordinate.WorkUnit
	for _, sr := range specs {
		var most *int64 // one more than still wanted, to know whether more exist; nil: all
		if limit > 0 {
			n := int64(limit - len(out) + 1)
			most = &n
		}
		rows, err := ns.b.pool.Query(ctx, groupSpecUnitsSQL, sr.id, bytesOf(group), most)
		if err != nil {
			return nil, false, fmt.Errorf("postgres group units %q: %w", group, err)
		}
		urs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (unitRow, error) { return scanUnit(r, sr.spec.Name) })
		if err != nil {
			return nil, false, fmt.Errorf("postgres group units %q: %w", group, err)
		}
		units := make([]*coordinate.WorkUnit, len(urs))
		for i := range urs {
			units[i] = &urs[i].unit
		}
		if err := ns.fillDependencies(ctx, sr.id, units, urs); err != nil {
			return nil, false, err
		}
		out = append(out, units...)
		if limit > 0 && len(out) > limit {
			return out[:limit], true, nil
		}
	}
	return out, false, nil
}

// WorkerUnits implements coordinate.WorkerUnitLister.
func (ns *namespace) WorkerUnits(ctx context.Context, id string) ([]coordinate.ChildWorkUnit, error) {
	now := ns.now()
	if err := ns.b.expireLeases(ctx, now); err != nil {
		return nil, err
	}
	ws, err := ns.workerUnits(ctx, workerUnitsSQL, bytesOf(id), now)
	if err != nil {
		return nil, fmt.Errorf("postgres units of worker %q: %w", id, err)
	}
	if len(ws) == 0 {
		return nil, fmt.Errorf("%w %q", coordinate.ErrNoSuchWorker, id)
	}
	return ws[0].Units, nil
}

// PoolStats returns the connection pool's figures.
func (b *Backend) PoolStats() *pgxpool.Stat { return b.pool.Stat() }

// CommitBatchSizes is the distribution of requests per committer
// transaction.
func (b *Backend) CommitBatchSizes() *histo.Histogram { return b.commits.batches }

func newCommitBatchHistogram() *histo.Histogram { return histo.Exponential(1, 2, 10) }
