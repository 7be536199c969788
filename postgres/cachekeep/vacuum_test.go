package cachekeep

import "testing"

// TestVacuumAfterClaims: once enough units are claimed the Keeper
// vacuums work_unit, and PostgreSQL records it.
func TestVacuumAfterClaims(t *testing.T) {
	e := newEnv(t, Config{VacuumAfterClaims: 10})
	e.add(1, numbered(15)...)
	e.claim(1, 15)
	if n := e.k.Settle().Vacuums; n != 1 {
		t.Fatalf("%d VACUUMs after 15 claims, want 1", n)
	}
	// PostgreSQL reports the statistics of a session a little later.
	waitFor(t, "pg_stat_user_tables to show a VACUUM of work_unit", func() bool {
		var count int64
		if err := e.pool.QueryRow(t.Context(), `SELECT vacuum_count FROM pg_stat_user_tables
			WHERE relname = 'work_unit' AND schemaname = current_schema()`).Scan(&count); err != nil {
			t.Fatal(err)
		}
		return count >= 1
	})
}

// TestVacuumOff: VacuumAfterClaims < 0 never vacuums.
func TestVacuumOff(t *testing.T) {
	e := newEnv(t, Config{VacuumAfterClaims: -1})
	e.add(1, numbered(15)...)
	e.claim(1, 15)
	if n := e.k.Settle().Vacuums; n != 0 {
		t.Fatalf("%d VACUUMs with vacuuming off, want 0", n)
	}
}
