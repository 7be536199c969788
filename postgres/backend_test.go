package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// TestMigrateConcurrently starts several migrations on one empty schema at
// once, as daemons starting together do: each migration is applied once.
func TestMigrateConcurrently(t *testing.T) {
	url := freshSchema(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Migrate(t.Context(), url)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Migrate #%d: %v", i, err)
		}
	}
	all, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n, distinct int
	if err := conn.QueryRow(t.Context(), "SELECT count(*), count(DISTINCT version) FROM schema_migrations").Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != len(all) || distinct != len(all) {
		t.Errorf("schema_migrations has %d rows (%d versions), want %d", n, distinct, len(all))
	}
}

// TestBatchIsolatesFailures sends many UpdateAttempt calls at once, half
// of them with a stale lease id: those fail with ErrLostLease, the others
// (committed in the same transactions) succeed.
func TestBatchIsolatesFailures(t *testing.T) {
	ctx := t.Context()
	_, ns := openBackend(t, freshSchema(t), Options{MaxConns: 4})
	def, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns.SetWorkSpec(ctx, def); err != nil {
		t.Fatal(err)
	}
	const units = 60
	in := make([]coordinate.WorkUnitInput, units)
	for i := range in {
		in[i] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("k%02d", i), Text: true}, Data: coordinate.EmptyMap}
	}
	if err := ns.AddWorkUnits(ctx, "s", in); err != nil {
		t.Fatal(err)
	}
	as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w"}, MaxJobs: units, LeaseTime: time.Hour})
	if err != nil || len(as) != units {
		t.Fatalf("GetWork = %d attempts, %v", len(as), err)
	}
	errs := make([]error, units)
	var wg sync.WaitGroup
	for i, a := range as {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := a.ID
			if i%2 == 1 {
				id += 1 << 40 // not this unit's lease
			}
			errs[i] = ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "s", Key: a.Key.Bytes, ID: id},
				coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case i%2 == 0 && err != nil:
			t.Errorf("finishing %s with its lease: %v", as[i].Key.Bytes, err)
		case i%2 == 1 && !errors.Is(err, coordinate.ErrLostLease):
			t.Errorf("finishing %s with a stale lease: %v, want ErrLostLease", as[i].Key.Bytes, err)
		}
	}
	counts, err := ns.CountWorkUnits(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	want := map[coordinate.Status]int{coordinate.StatusFinished: units / 2, coordinate.StatusPending: units / 2}
	if len(counts) != len(want) || counts[coordinate.StatusFinished] != want[coordinate.StatusFinished] ||
		counts[coordinate.StatusPending] != want[coordinate.StatusPending] {
		t.Errorf("counts = %v, want %v", counts, want)
	}
}
