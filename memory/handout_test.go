package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// TestHandOutOrderSurvivesRestart builds the same state in a volatile
// backend and in a journaled one, restarts the journaled one from its
// snapshot (which stores no heap positions: the heaps are rebuilt), and
// checks that both hand out every unit in the same order, leased units
// expiring back included: the heaps' orders are total, so the layout the
// rebuild gives does not matter.
func TestHandOutOrderSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	liveClock, clock := coordinate.NewFakeClock(start), coordinate.NewFakeClock(start)
	live := New(Options{Clock: liveClock, StallTimeout: time.Minute})
	defer live.Close()
	b := openPersistent(t, dir, clock, 1<<40)
	worker := coordinate.Name{Bytes: "w", Text: true}
	def := coordinate.Data{0xa1, 0x64, 'n', 'a', 'm', 'e', 0x61, 's'}
	r := rand.New(rand.NewPCG(3, 4))
	var units []coordinate.WorkUnitInput
	for i := range 3000 {
		p := float64(r.IntN(3)) // many ties: key order decides among them
		key := coordinate.Name{Bytes: fmt.Sprintf("%x", r.Uint64()), Text: i%4 != 0}
		units = append(units, coordinate.WorkUnitInput{Key: key, Data: smallData, Priority: &p})
	}
	apply := func(ns coordinate.Namespace, clk *coordinate.FakeClock) {
		if _, err := ns.SetWorkSpec(ctx, def); err != nil {
			t.Fatal(err)
		}
		if err := ns.AddWorkUnits(ctx, "s", units); err != nil {
			t.Fatal(err)
		}
		for range 40 { // leases of different lengths: the pending heap
			clk.Add(time.Second)
			if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, LeaseTime: time.Duration(1+r.IntN(50)) * time.Minute, MaxJobs: 5}); err != nil {
				t.Fatal(err)
			}
		}
	}
	nsLive, err := live.Namespace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	seed := *r
	apply(nsLive, liveClock)
	*r = seed
	apply(nsOf(t, b, ""), clock)
	if _, err := b.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	crash(t, b)
	b2 := openPersistent(t, dir, clock, 1<<40)
	defer b2.Close()
	if rep := b2.wal.j.Report(); rep.Snapshot == "" || rep.Records != 0 {
		t.Fatalf("want the state from the snapshot alone, got %+v", rep)
	}
	restored := nsOf(t, b2, "")

	order := func(ns coordinate.Namespace, clk *coordinate.FakeClock) []string {
		clk.Add(2 * time.Hour) // every lease expires: the pending heap decides their return
		var keys []string
		for {
			as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, LeaseTime: time.Hour, MaxJobs: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(as) == 0 {
				return keys
			}
			keys = append(keys, as[0].Key.Bytes)
		}
	}
	want, got := order(nsLive, liveClock), order(restored, clock)
	if len(want) != len(units) {
		t.Fatalf("the live backend handed out %d units of %d", len(want), len(units))
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("after the restart unit %d handed out is %v, live %q (%d and %d units)", i, got[min(i, len(got)-1)], want[i], len(got), len(want))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("after the restart %d units were handed out, live %d", len(got), len(want))
	}
}
