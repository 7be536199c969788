package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/jackc/pgx/v5"

	"coordinated/coordinate"
)

// claimUnits sets up spec "s" with n units on b and claims them all.
func claimUnits(t *testing.T, b *Backend, n int) {
	t.Helper()
	ctx := t.Context()
	ns, err := b.Namespace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	def, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns.SetWorkSpec(ctx, def); err != nil {
		t.Fatal(err)
	}
	in := make([]coordinate.WorkUnitInput, n)
	for i := range in {
		in[i] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("k%03d", i), Text: true}, Data: coordinate.EmptyMap}
	}
	if err := ns.AddWorkUnits(ctx, "s", in); err != nil {
		t.Fatal(err)
	}
	as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w"}, MaxJobs: n})
	if err != nil || len(as) != n {
		t.Fatalf("GetWork = %d attempts, %v", len(as), err)
	}
}

// TestVacuumAfterClaims: once enough units are claimed the backend
// vacuums work_unit, and PostgreSQL records it.
func TestVacuumAfterClaims(t *testing.T) {
	url := freshSchema(t)
	b, err := New(t.Context(), url, Options{MaxConns: 4, VacuumAfterClaims: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	claimUnits(t, b, 15)
	b.waitVacuum()
	if n := b.vacuum.runs.Load(); n != 1 {
		t.Fatalf("%d VACUUMs after 15 claims, want 1", n)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		var count int64
		if _, err := conn.Exec(t.Context(), "SELECT pg_stat_clear_snapshot()"); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(t.Context(), `SELECT vacuum_count FROM pg_stat_user_tables
			WHERE relname = 'work_unit' AND schemaname = current_schema()`).Scan(&count); err != nil {
			t.Fatal(err)
		}
		if count >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pg_stat_user_tables shows no VACUUM of work_unit")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestVacuumOff: VacuumAfterClaims < 0 never vacuums.
func TestVacuumOff(t *testing.T) {
	b, err := New(t.Context(), freshSchema(t), Options{MaxConns: 4, VacuumAfterClaims: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	claimUnits(t, b, 15)
	b.waitVacuum()
	if n := b.vacuum.runs.Load(); n != 0 {
		t.Fatalf("%d VACUUMs with vacuuming off, want 0", n)
	}
}
