package postgres

import (
	"regexp"
	"strings"
	"testing"
)

// TestUnitCountUpsertsAgree: the hot statements that write unit_count
// inline (migration 0008 says why) use unit_count_add's slot and conflict
// clauses, word for word.
func TestUnitCountUpsertsAgree(t *testing.T) {
	def, err := migrationFiles.ReadFile("migrations/0008_unit_count_add.sql")
	if err != nil {
		t.Fatal(err)
	}
	ws := regexp.MustCompile(`\s+`)
	norm := func(s string) string { return ws.ReplaceAllString(s, " ") }
	slot := "(pg_backend_pid() % 64)::smallint"
	conflict := "ON CONFLICT (spec_id, status, slot) DO UPDATE SET n = unit_count.n + EXCLUDED.n"
	for _, part := range []string{slot, conflict, "INSERT INTO unit_count (spec_id, status, slot, n)"} {
		if !strings.Contains(norm(string(def)), part) {
			t.Fatalf("unit_count_add no longer contains %q: update this test and the inline copies", part)
		}
	}
	resolve, err := migrationFiles.ReadFile("migrations/0014_resolve_locks_all_dependents.sql")
	if err != nil {
		t.Fatal(err)
	}
	for name, sql := range map[string]string{
		"claim.sql": claimSQL, "claim_many.sql": claimManySQL, "finish.sql": finishSQL, "sweep.sql": sweepSQL,
		"resolve_finished_units": string(resolve), "deps_unblock_free": depsUnblockFreeSQL,
	} {
		s := norm(sql)
		inserts := strings.Count(s, "INSERT INTO unit_count")
		if inserts == 0 {
			t.Errorf("%s no longer writes unit_count inline: drop it from this test", name)
		}
		if strings.Count(s, slot) != inserts || strings.Count(s, conflict) != inserts {
			t.Errorf("%s writes unit_count with other slot or conflict clauses than unit_count_add", name)
		}
	}
}
