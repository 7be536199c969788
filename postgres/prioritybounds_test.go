package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// TestPriorityBoundsFollowEveryPath: the scheduler's read does not probe
// a spec whose units all have one priority (the bounds of migration
// 0012); a unit of another priority must have widened them by the time
// any path makes it available, or the read would report the old priority
// and the scheduler choose by weights instead. Specs "lo" (weight 100)
// and "hi" (weight 1) hold units of priority 0, so the first get_work
// takes a unit of lo; then each path makes a unit of hi with priority 10
// available, and the next get_work must take it (best-unit priority comes
// before weights). The paths that change a unit's status keep its
// priority, which its insert put in the bounds, whatever its status then
// (a blocked unit's too).
func TestPriorityBoundsFollowEveryPath(t *testing.T) {
	ten := 10.0
	high := func(key string) coordinate.WorkUnitInput {
		u := unit(key, map[string]any{})
		u.Priority = &ten
		return u
	}
	// leased adds hi/x of priority 10 and leases it.
	leased := func(e *fastEnv) {
		e.add("hi", high("x"))
		if as := e.getWork([]string{"hi"}, 1); len(as) != 1 || as[0].Key.Bytes != "x" {
			e.t.Fatalf("leasing hi/x got %s", specsOf(as))
		}
	}
	update := func(e *fastEnv, key string, upd coordinate.WorkUnitUpdate) {
		e.t.Helper()
		if err := e.ns.UpdateWorkUnit(e.t.Context(), "hi", key, upd); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name    string
		prepare func(e *fastEnv) // before the first read
		path    func(e *fastEnv) // makes a unit of hi with priority 10 available
		want    string           // its key
	}{
		{"add", nil, func(e *fastEnv) { e.add("hi", high("x")) }, "x"},
		{"re-add with a priority", nil, func(e *fastEnv) { e.add("hi", high("u00001")) }, "u00001"},
		{"prioritize", nil, func(e *fastEnv) {
			if _, err := e.ns.PrioritizeWorkUnits(e.t.Context(), "hi", []string{"u00002"}, &ten, 0); err != nil {
				e.t.Fatal(err)
			}
		}, "u00002"},
		{"give back", leased, func(e *fastEnv) {
			update(e, "x", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
		}, "x"},
		{"expired lease", leased, func(e *fastEnv) { e.clock.Add(2 * time.Minute) }, "x"},
		{"retry", func(e *fastEnv) {
			leased(e)
			update(e, "x", coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed})
		}, func(e *fastEnv) {
			if n, err := e.ns.RetryWorkUnits(e.t.Context(), "hi", []string{"x"}); err != nil || n != 1 {
				e.t.Fatalf("RetryWorkUnits = %d, %v", n, err)
			}
		}, "x"},
		{"dependency finished", func(e *fastEnv) {
			e.add("hi", unit("d", map[string]any{}))
			x := high("x")
			x.DependsOn = []coordinate.UnitRef{{Spec: "hi", Key: "d"}}
			e.add("hi", x)
			if as := e.getWork([]string{"hi"}, 1); len(as) != 1 || as[0].Key.Bytes != "d" {
				e.t.Fatalf("leasing hi/d got %s", specsOf(as))
			}
		}, func(e *fastEnv) { update(e, "d", finish) }, "x"},
		{"chained", func(e *fastEnv) {
			e.spec(map[string]any{"name": "src", "then": "hi"})
			e.add("src", unit("s", map[string]any{}))
			if as := e.getWork([]string{"src"}, 1); len(as) != 1 {
				e.t.Fatalf("leasing src/s got %s", specsOf(as))
			}
		}, func(e *fastEnv) {
			err := e.ns.UpdateWorkUnit(e.t.Context(), "src", "s",
				finishWith([]any{[]any{"x", map[string]any{}, map[string]any{"priority": 10}}}))
			if err != nil {
				e.t.Fatal(err)
			}
		}, "x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newFastEnv(t)
			e.spec(map[string]any{"name": "lo", "weight": 100})
			e.spec(map[string]any{"name": "hi", "weight": 1})
			e.add("lo", numbered(3)...)
			e.add("hi", numbered(3)...)
			if c.prepare != nil {
				c.prepare(e)
			}
			if as := e.getWork(nil, 1); len(as) != 1 || as[0].Spec.Bytes != "lo" {
				t.Fatalf("first get_work got %s, want a unit of lo", specsOf(as))
			}
			c.path(e)
			if as := e.getWork(nil, 1); len(as) != 1 || as[0].Spec.Bytes != "hi" || as[0].Key.Bytes != c.want {
				t.Errorf("get_work after the %s got %s, want hi/%s", c.name, specsOf(as), c.want)
			}
		})
	}
}

// TestPriorityBoundsProbeDelayedUnits: a spec that has had a delayed unit
// (added so, or re-added with a delay) is probed, so a spec whose
// available units are all delayed is not chosen (were the bounds'
// priority taken for its best unit's, it would be: it has the higher
// weight).
func TestPriorityBoundsProbeDelayedUnits(t *testing.T) {
	for _, readd := range []bool{false, true} {
		e := newFastEnv(t)
		e.spec(map[string]any{"name": "lo", "weight": 1})
		e.spec(map[string]any{"name": "later", "weight": 100})
		e.add("lo", numbered(3)...)
		u := unit("x", map[string]any{})
		if readd {
			e.add("later", u)
		}
		u.Delay = time.Hour
		e.add("later", u)
		if as := e.getWork(nil, 1); len(as) != 1 || as[0].Spec.Bytes != "lo" {
			t.Errorf("re-added %v: get_work got %s, want a unit of lo (later's only unit is delayed)", readd, specsOf(as))
		}
		e.clock.Add(2 * time.Hour)
		if as := e.getWork(nil, 1); len(as) != 1 || as[0].Spec.Bytes != "later" {
			t.Errorf("re-added %v: get_work after the delay got %s, want later/x", readd, specsOf(as))
		}
	}
}

// TestPriorityBoundsSkipTheProbe: with every unit of a spec at one
// priority, the read reports that priority without probing; the bounds
// are the lowest and highest priority of the spec's units.
func TestPriorityBoundsSkipTheProbe(t *testing.T) {
	e := newFastEnv(t)
	e.spec(map[string]any{"name": "a"})
	e.spec(map[string]any{"name": "b"})
	five := 5.0
	u := unit("p", map[string]any{})
	u.Priority = &five
	e.add("a", numbered(2)...)
	e.add("b", u, unit("q", map[string]any{}))
	got := e.rows("SELECT format('%s %s %s %s', convert_from(name, 'UTF8'), units_priority_low, units_priority_high, units_delayed) FROM work_spec ORDER BY name")
	want := []string{"a 0 0 f", "b 0 5 f"}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("bounds %q, want %q", got, want)
	}
	nsImpl := e.ns.(*watchedNamespace).ns
	cands, err := nsImpl.candidates(e.t.Context(), coordinate.WorkRequest{}, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cands {
		wantBest := map[string]float64{"a": 0, "b": 5}[c.row.spec.Name.Bytes]
		if !c.hasBest || c.best != wantBest {
			t.Errorf("spec %s: best %v (%v), want %v", c.row.spec.Name.Bytes, c.best, c.hasBest, wantBest)
		}
	}
	// The probe runs once, for b; a's best comes from its bounds.
	tx, err := e.b.pool.Begin(e.t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(e.t.Context()) //nolint:errcheck
	if _, err := tx.Exec(e.t.Context(), candidatesSettings); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(e.t.Context(), "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "+candidatesSQL,
		nsImpl.id, [][]byte{}, e.clock.Now().UnixNano(), true, readAll)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	probes := ""
	for _, l := range plan {
		if strings.Contains(l, "using work_unit_available on work_unit") {
			probes = l
		}
	}
	if !strings.Contains(probes, "loops=1)") {
		t.Errorf("the probes ran %q, want once (for b):\n%s", probes, strings.Join(plan, "\n"))
	}
}

// TestMigrationToPriorityBounds: migration 0012 computes each spec's
// bounds from the units it already has, whatever their status.
func TestMigrationToPriorityBounds(t *testing.T) {
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, freshSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := migrateConnTo(ctx, conn, 11); err != nil {
		t.Fatal(err)
	}
	var nsID int64
	if err := conn.QueryRow(ctx, `INSERT INTO namespace (name) VALUES ('') RETURNING id`).Scan(&nsID); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`INSERT INTO work_spec (namespace_id, name, name_text, definition, priority, weight, paused,
			continuous, can_be_continuous, interval_ns, max_running, max_getwork, max_retries, min_gb,
			then_name, then_preempts, runtime)
		SELECT $1, n, true, '\xa0', 0, 20, false, false, false, 0, 0, 0, 0, 0, '', false, ''
		FROM unnest(ARRAY['a', 'b', 'c']::bytea[]) n`,
		`INSERT INTO work_unit (spec_id, key, key_text, data, status, priority, not_before)
		SELECT s.id, u.k, true, '\xa0', u.st, u.p, u.nb FROM work_spec s
		JOIN (VALUES ('a'::bytea, 'a1'::bytea, 1::smallint, 1::float8, NULL::bigint), ('a', 'a2', 3, 3, NULL),
			('b', 'b1', 1, 2, 5)) u (spec, k, st, p, nb) ON s.name = u.spec
		WHERE s.namespace_id = $1`,
	} {
		if _, err := conn.Exec(ctx, sql, nsID); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := migrateConnTo(ctx, conn, 12); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT format('%s %s %s %s', convert_from(name, 'UTF8'), units_priority_low,
		units_priority_high, units_delayed) FROM work_spec ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a 1 3 f", "b 2 2 t", "c   f"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("bounds after migrating %q, want %q", got, want)
	}
}
