package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// copyDataDir copies the files of a data directory: the
// disk as a crash at this instant would leave it, if nothing written later
// reached the disk.
func copyDataDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// GetWork answers before its lease record is durable, so a crash may lose
// the lease (docs/persistence.md). What the daemon then recovers is the
// state before the lease: the unit is AVAILABLE with its attempt count
// unchanged, handed out again, and the first worker's late finish (no
// ownership check in the legacy protocol) still finishes it, once.
func TestLeaseLostInCrashIsHandedOutAgain(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 0)
	ns := nsOf(t, b, "")
	defineSpec(t, ctx, ns, "s")
	if err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "u", Text: true}}}); err != nil {
		t.Fatal(err)
	}
	beforeLease := copyDataDir(t, dir) // every acknowledged change, no lease
	getWork := func(ns *namespace, worker string) coordinate.Attempt {
		t.Helper()
		as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: worker, Text: true}, LeaseTime: time.Minute, MaxJobs: 1})
		if err != nil || len(as) != 1 {
			t.Fatalf("get_work for %s: %v %v", worker, as, err)
		}
		return as[0]
	}
	first := getWork(ns, "w1")
	crash(t, b)

	// The crash kept nothing after the add.
	b2 := openPersistent(t, beforeLease, clock, 0)
	defer b2.Close()
	ns2 := nsOf(t, b2, "")
	units, err := ns2.GetWorkUnits(ctx, "s", []string{"u"})
	if err != nil {
		t.Fatal(err)
	}
	if u := units[0]; u.Status != coordinate.StatusAvailable || u.Attempts != 0 {
		t.Fatalf("unit after losing its lease: status %v, %d attempts; want available, 0", u.Status, u.Attempts)
	}
	second := getWork(ns2, "w2")
	if second.Key.Bytes != first.Key.Bytes {
		t.Fatalf("re-issued lease is for %q, want %q", second.Key.Bytes, first.Key.Bytes)
	}
	// w1's late finish, then w2's: finished once.
	finished := coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}
	if err := ns2.UpdateWorkUnit(ctx, "s", "u", finished); err != nil {
		t.Fatalf("late finish by the worker whose lease was lost: %v", err)
	}
	if err := ns2.UpdateWorkUnit(ctx, "s", "u", finished); err != nil {
		t.Fatalf("second finish: %v", err)
	}
	n, err := ns2.CountWorkUnits(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if n[coordinate.StatusFinished] != 1 || len(n) != 1 {
		t.Fatalf("counts %v, want one finished unit", n)
	}
}

// A finish acknowledged after an unawaited GetWork makes the lease durable
// with it: the journal is sequential, so nothing replays out of order.
func TestFinishMakesEarlierLeaseDurable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 0)
	ns := nsOf(t, b, "")
	defineSpec(t, ctx, ns, "s")
	keys := []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "a", Text: true}}, {Key: coordinate.Name{Bytes: "b", Text: true}}}
	if err := ns.AddWorkUnits(ctx, "s", keys); err != nil {
		t.Fatal(err)
	}
	as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}, LeaseTime: time.Minute, MaxJobs: 2})
	if err != nil || len(as) != 2 {
		t.Fatalf("get_work: %v %v", as, err)
	}
	if err := ns.UpdateWorkUnit(ctx, "s", "a", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		t.Fatal(err)
	}
	afterFinish := copyDataDir(t, dir) // written in order: the lease precedes the finish
	crash(t, b)

	b2 := openPersistent(t, afterFinish, clock, 0)
	defer b2.Close()
	units, err := nsOf(t, b2, "").GetWorkUnits(ctx, "s", []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if units[0].Status != coordinate.StatusFinished || units[1].Status != coordinate.StatusPending || units[1].Worker == nil || units[1].Worker.Bytes != "w" {
		t.Fatalf("after crash: a %v, b %v by %v; want a finished, b pending by w", units[0].Status, units[1].Status, units[1].Worker)
	}
}

// GetWork does not wait for its records, but still fails once the backend
// is closed rather than handing out a lease that can never be journaled.
func TestGetWorkAfterCloseFails(t *testing.T) {
	ctx := context.Background()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, t.TempDir(), clock, 0)
	ns := nsOf(t, b, "")
	defineSpec(t, ctx, ns, "s")
	if err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "u", Text: true}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}, LeaseTime: time.Minute, MaxJobs: 1})
	if err == nil {
		t.Fatalf("GetWork after Close = %v, nil error; want the journal's closed error", as)
	}
	if !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("GetWork after Close: %v, want journal.ErrClosed", err)
	}
}
