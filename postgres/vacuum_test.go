package postgres

import "testing"

// TestVacuumAfterClaims: once enough units are claimed the backend
// vacuums work_unit, and PostgreSQL records it.
func TestVacuumAfterClaims(t *testing.T) {
	e := newFastEnvWith(t, Options{VacuumAfterClaims: 10})
	e.spec(map[string]any{"name": "s"})
	e.add("s", numbered(15)...)
	e.claim("s", 15)
	e.b.vacuum.run.wait()
	if n := e.b.vacuum.runs.Load(); n != 1 {
		t.Fatalf("%d VACUUMs after 15 claims, want 1", n)
	}
	// PostgreSQL reports the statistics of a session a little later.
	waitFor(t, "pg_stat_user_tables to show a VACUUM of work_unit", func() bool {
		var count int64
		if err := e.b.pool.QueryRow(t.Context(), `SELECT vacuum_count FROM pg_stat_user_tables
			WHERE relname = 'work_unit' AND schemaname = current_schema()`).Scan(&count); err != nil {
			t.Fatal(err)
		}
		return count >= 1
	})
}

// TestVacuumOff: VacuumAfterClaims < 0 never vacuums.
func TestVacuumOff(t *testing.T) {
	e := newFastEnvWith(t, Options{VacuumAfterClaims: -1})
	e.spec(map[string]any{"name": "s"})
	e.add("s", numbered(15)...)
	e.claim("s", 15)
	e.b.vacuum.run.wait()
	if n := e.b.vacuum.runs.Load(); n != 0 {
		t.Fatalf("%d VACUUMs with vacuuming off, want 0", n)
	}
}
