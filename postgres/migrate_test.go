package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// TestMigrationToUnitPrimaryKey starts from the schema before migration 6
// (units named by a surrogate id), stores a leased unit listed as a
// worker's outstanding unit and a blocked unit with a dependency, then
// migrates: the worker still holds its unit, the dependency still blocks,
// and both still work (the dependency releases its dependent when it
// finishes; finishing the leased unit takes it off the worker's list).
func TestMigrationToUnitPrimaryKey(t *testing.T) {
	ctx := t.Context()
	url := freshSchema(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := migrateConnTo(ctx, conn, 5); err != nil {
		t.Fatal(err)
	}
	one := func(sql string, args ...any) int64 {
		t.Helper()
		var id int64
		if err := conn.QueryRow(ctx, sql, args...).Scan(&id); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return id
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	def, _ := cbor.Marshal(map[string]any{"name": "s"})
	far := time.Now().Add(time.Hour).UnixNano()
	nsID := one(`INSERT INTO namespace (name) VALUES ('') RETURNING id`)
	specID := one(`INSERT INTO work_spec (namespace_id, name, name_text, definition, priority, weight, paused,
			continuous, can_be_continuous, interval_ns, max_running, max_getwork, max_retries, min_gb,
			then_name, then_preempts, runtime)
		VALUES ($1, 's', true, $2, 0, 20, false, false, false, 0, 0, 0, 0, 0, '', false, '')
		RETURNING id`, nsID, def)
	unitA := one(`INSERT INTO work_unit (spec_id, key, key_text, data, status, expires, worker, worker_text, lease_id, attempts)
		VALUES ($1, 'a', true, '\xa0', 3, $2, 'w', true, 7, 1) RETURNING id`, specID, far)
	unitB := one(`INSERT INTO work_unit (spec_id, key, key_text, data, status) VALUES ($1, 'b', true, '\xa0', 2)
		RETURNING id`, specID)
	exec(`INSERT INTO work_unit (spec_id, key, key_text, data, status) VALUES ($1, 'c', true, '\xa0', 1)`, specID)
	exec(`INSERT INTO unit_count (spec_id, status, slot, n) VALUES ($1, 1, 0, 1), ($1, 2, 0, 1), ($1, 3, 0, 1)`, specID)
	worker := one(`INSERT INTO worker (namespace_id, name, name_text, mode, data, parent, parent_text, last_heard, expires)
		VALUES ($1, 'w', true, '', '\xa0', 'p', true, 0, $2) RETURNING id`, nsID, far)
	exec(`INSERT INTO worker_unit (worker_id, unit_id) VALUES ($1, $2)`, worker, unitA)
	exec(`INSERT INTO unit_dep (unit_id, namespace_id, dep_spec, dep_key, seq) VALUES ($1, $2, 's', 'c', 0)`, unitB, nsID)

	_, ns := openBackend(t, url, Options{})
	held := func() []string {
		t.Helper()
		children, err := ns.ChildWorkUnits(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, c := range children {
			for _, u := range c.Units {
				keys = append(keys, c.Worker.Bytes+":"+u.Key.Bytes)
			}
		}
		return keys
	}
	if got := held(); len(got) != 1 || got[0] != "w:a" {
		t.Errorf("after migrating, worker p's children hold %q, want [w:a]", got)
	}
	us, err := ns.GetWorkUnits(ctx, "s", []string{"b"})
	if err != nil || len(us) != 1 {
		t.Fatalf("GetWorkUnits(b) = %v, %v", us, err)
	}
	if us[0].Status != coordinate.StatusBlocked || len(us[0].DependsOn) != 1 || us[0].DependsOn[0] != (coordinate.UnitRef{Spec: "s", Key: "c"}) {
		t.Errorf("after migrating, b is %v depending on %v, want blocked on s/c", us[0].Status, us[0].DependsOn)
	}

	as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w2"}, MaxJobs: 10, LeaseTime: time.Hour})
	if err != nil || len(as) != 1 || as[0].Key.Bytes != "c" {
		t.Fatalf("GetWork = %v, %v; want only c", as, err)
	}
	if err := ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "s", Key: "c", ID: as[0].ID},
		coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		t.Fatal(err)
	}
	if us, err := ns.GetWorkUnits(ctx, "s", []string{"b"}); err != nil || len(us) != 1 || us[0].Status != coordinate.StatusAvailable {
		t.Errorf("after c finished, b = %v, %v; want available", us, err)
	}
	if err := ns.UpdateWorkUnit(ctx, "s", "a", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		t.Fatal(err)
	}
	if got := held(); len(got) != 0 {
		t.Errorf("after a finished, worker p's children hold %q, want none", got)
	}
}
