package postgres

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestFinishPlanUsesPrimaryKey: the committer runs finish.sql with its
// generic plan, made once per connection. That plan must reach the units
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
	if _, err := tx.Exec(ctx, "PREPARE finish_plan (bigint[], bytea[], bytea[], bytea[], boolean[], bigint[], bigint[], integer[]) AS "+finishSQL); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, "EXPLAIN EXECUTE finish_plan ('{1}', '{s}', '{u00001}', '{NULL}', '{false}', '{NULL}', '{0}', '{0}')")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if strings.Contains(plan, "Seq Scan on work_unit") {
		t.Errorf("finish.sql's generic plan scans work_unit:\n%s", plan)
	}
	if !strings.Contains(plan, "work_unit_pkey") {
		t.Errorf("finish.sql's generic plan does not use the primary key:\n%s", plan)
	}
}
