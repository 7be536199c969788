package memory

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// A capture shares each worker's outstanding units with the state instead
// of copying them in the pause: the state's changes after the boundary
// (a unit finished, another leased) must copy them first, so the capture
// still lists what the worker held at the boundary and the state what it
// holds now.
func TestCaptureSharesOutstandingUntilChanged(t *testing.T) {
	ctx := context.Background()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ns := newNamespace("x", Options{Clock: clock, StallTimeout: time.Minute})
	defineSpec(t, ctx, ns, "s")
	worker := coordinate.Name{Bytes: "w", Text: true}
	if err := ns.WorkerHeartbeat(ctx, coordinate.Heartbeat{Worker: worker, Mode: coordinate.Data{0x41, 0x52}, Data: coordinate.EmptyMap, Expire: time.Hour}); err != nil {
		t.Fatal(err)
	}
	var in []coordinate.WorkUnitInput
	for _, k := range []string{"a", "b", "c"} {
		in = append(in, coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: k, Text: true}, Data: coordinate.EmptyMap})
	}
	if err := ns.AddWorkUnits(ctx, "s", in); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a, then b
		if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, LeaseTime: time.Hour, MaxJobs: 1}); err != nil {
			t.Fatal(err)
		}
	}

	c := beginCapture(ns, captureChunk, false)
	if err := ns.UpdateWorkUnit(ctx, "s", "a", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, LeaseTime: time.Hour, MaxJobs: 1}); err != nil {
		t.Fatal(err)
	}

	if len(c.out.workers) != 1 {
		t.Fatalf("captured %d workers, want 1", len(c.out.workers))
	}
	cw := &c.out.workers[0]
	cw.resolve()
	var captured []string
	for _, r := range cw.outstanding {
		captured = append(captured, r.Key)
	}
	if want := []string{"a", "b"}; !slices.Equal(captured, want) {
		t.Errorf("the capture lists %q outstanding, want the boundary's %q", captured, want)
	}
	var live []string
	for u := range ns.st.workers.byID["w"].outstanding {
		live = append(live, u.key)
	}
	slices.Sort(live)
	if want := []string{"b", "c"}; !slices.Equal(live, want) {
		t.Errorf("the worker holds %q, want %q", live, want)
	}
}
