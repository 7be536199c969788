package cachekeep

import (
	"context"
	_ "embed"
	"sync/atomic"
	"time"
)

var (
	//go:embed sql/analyze_units.sql
	analyzeUnitsSQL string
	//go:embed sql/units_estimate.sql
	unitsEstimateSQL string
)

// Planner statistics after bulk loads. A work_unit table filled faster
// than autovacuum notices (it looks once a minute) still has the
// statistics of an empty table, and with those the planner sorts every
// available unit of a spec on each get_work instead of reading the
// partial index in order. So the Keeper runs ANALYZE itself, in the
// background, whenever the units it added since the last ANALYZE reach
// half the table (at least minAnalyzeGrowth): a handful of times while a
// table grows to millions, never in steady state.

const (
	minAnalyzeGrowth = 10000
	analyzeTimeout   = 5 * time.Minute
)

type analyzer struct {
	run  backgroundRun // counts units added
	rows atomic.Int64  // work_unit rows at the last ANALYZE
}

// noteAdded records n added units and starts a background ANALYZE when the
// table has grown enough.
func (k *Keeper) noteAdded(n int) {
	a := &k.analyze
	a.run.add(int64(n), max(minAnalyzeGrowth, a.rows.Load()/2), k.runAnalyze)
}

func (k *Keeper) runAnalyze() {
	ctx, cancel := context.WithTimeout(context.Background(), analyzeTimeout)
	defer cancel()
	var rows float64
	_, err := k.pool.Exec(ctx, analyzeUnitsSQL)
	if err == nil {
		err = k.pool.QueryRow(ctx, unitsEstimateSQL).Scan(&rows)
	}
	if err != nil {
		k.log.Warn("postgres backend: ANALYZE work_unit after a bulk load failed", "err", err)
	}
	if rows > 0 {
		k.analyze.rows.Store(int64(rows))
	}
}
