package postgres

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestFinishPlanUsesPrimaryKey: the committer runs finish.sql (and
// finish_chain.sql) with its generic plan, made once per connection. That plan must reach the units
// through the primary key even when the table is small: a hash join with
// a scan of work_unit, which an earlier version got at 10,000 units, made
// every finish read the whole table and cost drain1 15%.
func TestFinishPlanUsesPrimaryKey(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.spec(map[string]any{"name": "s"})
	e.add("s", numbered(10000)...)
	e.claim("s", 100)
	if _, err := e.b.pool.Exec(ctx, "ANALYZE work_unit"); err != nil {
		t.Fatal(err)
	}
	conn, err := e.b.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, genericPlans); err != nil {
		t.Fatal(err)
	}
	for _, st := range []struct{ name, prepare, explain string }{
		{"finish.sql",
			"PREPARE finish_plan (bigint[], bytea[], bytea[], bytea[], boolean[], bigint[], bigint[], integer[]) AS " + finishSQL,
			"EXPLAIN EXECUTE finish_plan ('{1}', '{s}', '{u00001}', '{NULL}', '{false}', '{NULL}', '{0}', '{0}')"},
		{"finish_chain.sql",
			"PREPARE finish_chain_plan (bigint[], bytea[], bytea[], bytea[], bigint[], bigint[], integer[], " +
				"integer[], bytea[], boolean[], bytea[], float8[], bigint[], bytea[]) AS " + finishChainSQL,
			"EXPLAIN EXECUTE finish_chain_plan ('{1}', '{s}', '{u00001}', '{\\xa0}', '{NULL}', '{0}', '{0}', " +
				"'{0}', '{u00002}', '{true}', '{\\xa0}', '{NULL}', '{NULL}', '{NULL}')"},
	} {
		if _, err := tx.Exec(ctx, st.prepare); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, st.explain)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		if strings.Contains(plan, "Seq Scan on work_unit") {
			t.Errorf("%s's generic plan scans work_unit:\n%s", st.name, plan)
		}
		if !strings.Contains(plan, "work_unit_pkey") {
			t.Errorf("%s's generic plan does not use the primary key:\n%s", st.name, plan)
		}
		if st.name == "finish_chain.sql" && strings.Contains(plan, "Seq Scan on work_spec") {
			t.Errorf("%s's generic plan scans work_spec:\n%s", st.name, plan)
		}
	}
}

// TestCandidatesUseCountIndex: the scheduler's read of a namespace's specs
// and their counts (candidates.sql with candidatesSettings, as GetWork runs
// it) must read unit_count through its index, one probe per spec, whatever
// the statistics say. With statistics taken when the namespace had one spec
// the planner otherwise scans all of unit_count once per spec.
func TestCandidatesUseCountIndex(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.spec(map[string]any{"name": "s000"})
	e.add("s000", numbered(1)...)
	if _, err := e.b.pool.Exec(ctx, "ANALYZE work_spec; ANALYZE unit_count"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 100; i++ {
		name := fmt.Sprintf("s%03d", i)
		e.spec(map[string]any{"name": name})
		e.add(name, numbered(1)...)
	}
	var nsID int64
	if err := e.b.pool.QueryRow(ctx, "SELECT id FROM namespace WHERE name = ''").Scan(&nsID); err != nil {
		t.Fatal(err)
	}
	for _, settings := range []string{"", candidatesSettings} {
		tx, err := e.b.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if settings != "" {
			if _, err := tx.Exec(ctx, settings); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "+candidatesSQL, nsID, [][]byte{}, e.clock.Now().UnixNano(), true, readAll)
		if err != nil {
			tx.Rollback(ctx) //nolint:errcheck // a transaction left open would stall the pool's close
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		tx.Rollback(ctx) //nolint:errcheck
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		seq := strings.Contains(plan, "Seq Scan on unit_count")
		switch {
		case settings == "" && !seq:
			// The test's premise: without the settings, stale statistics
			// do produce the bad plan. If PostgreSQL stops choosing it,
			// this test no longer shows that the settings matter.
			t.Logf("without candidatesSettings the plan no longer scans unit_count:\n%s", plan)
		case settings != "" && seq:
			t.Errorf("candidates.sql with %q scans unit_count:\n%s", settings, plan)
		case settings != "" && !strings.Contains(plan, "Index Scan using unit_count_pkey"):
			t.Errorf("candidates.sql with %q does not use unit_count's index:\n%s", settings, plan)
		case settings != "" && strings.Contains(plan, "Seq Scan on work_unit"):
			t.Errorf("candidates.sql with %q scans work_unit for the best units:\n%s", settings, plan)
		}
		if strings.Contains(plan, "rows=100 loops=100)") {
			t.Errorf("candidates.sql reads its specs once per spec:\n%s", plan)
		}
		if !strings.Contains(plan, "rows=100 loops=1") {
			t.Errorf("the plan does not return the 100 specs:\n%s", plan)
		}
	}
}

// TestOldestAvailablePlanProbesIndex: Stats reads each spec's oldest
// AVAILABLE unit as the first entry of work_unit_available_since (one
// probe per spec), never by reading the spec's available units.
func TestOldestAvailablePlanProbesIndex(t *testing.T) {
	e := newFastEnv(t)
	e.spec(map[string]any{"name": "s"})
	e.add("s", numbered(10000)...)
	e.exec("ANALYZE work_unit")
	var plan string
	for _, line := range e.rows("EXPLAIN "+oldestAvailSQL, e.b.namespaces[""].id) {
		plan += line + "\n"
	}
	if !strings.Contains(plan, "Limit") || !strings.Contains(plan, "work_unit_available_since") ||
		strings.Contains(plan, "Sort") || strings.Contains(plan, "Seq Scan on work_unit") {
		t.Errorf("stats_oldest_available does not probe work_unit_available_since:\n%s", plan)
	}
}

// exec runs a statement, failing the test on an error.
func (e *fastEnv) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.b.pool.Exec(e.t.Context(), sql, args...); err != nil {
		e.t.Fatal(err)
	}
}

// rows runs a query whose rows are one string each.
func (e *fastEnv) rows(sql string, args ...any) []string {
	e.t.Helper()
	rows, err := e.b.pool.Query(e.t.Context(), sql, args...)
	if err == nil {
		var out []string
		if out, err = pgx.CollectRows(rows, pgx.RowTo[string]); err == nil {
			return out
		}
	}
	e.t.Fatal(err)
	return nil
}
