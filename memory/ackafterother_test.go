package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// A chunked delete_work_spec that finds the spec deleted by another
// client between two of its chunks answers success: the spec is gone,
// which is what it asked for. That answer reports the other client's
// deletion, so it may go out only once that deletion's record is durable,
// although the call's own records (its chunks) were durable before. Here
// the other client's record is appended and nobody waits for it (its
// caller has not got to its Wait yet): the call must wait for it, or a
// crash right after its answer brings the spec back.
func TestChunkedSpecDeleteWaitsForTheDeleteItReports(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Unix(1e9, 0))
	b := openPersistent(t, dir, clock, 0)
	defer b.Close()
	ns := nsOf(t, b, "ns")
	defineSpec(t, ctx, ns, "t")
	for i := range 10 {
		if err := ns.AddWorkUnits(ctx, "t", []coordinate.WorkUnitInput{{
			Key: coordinate.Name{Bytes: fmt.Sprintf("u%02d", i), Text: true}, Data: coordinate.EmptyMap, Group: "g"}}); err != nil {
			t.Fatal(err)
		}
	}
	ns.deleteChunk = 3
	deleted := false
	ns.betweenChunks = func() {
		ns.mu.Lock()
		defer ns.unlock()
		if deleted || len(ns.st.specs["t"].units) == 10 {
			return // not before the call has dropped a chunk of its own
		}
		deleted = true
		// The records so far are durable (as other clients' waits
		// would have made them), then another client deletes the spec
		// and has not waited yet.
		if err := b.wal.j.Flush(ctx); err != nil {
			t.Error(err)
		}
		ns.commit(&opDeleteWorkSpec{Spec: "t", Now: clock.Now().UnixNano()})
		ns.ticket = 0 // the other client's, which it waits for itself
	}
	if err := ns.DeleteWorkSpec(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	ns.betweenChunks = nil
	if !deleted {
		t.Fatal("the delete did not let go of the lock after its first chunk")
	}
	// A power cut now: what is on disk is what survives.
	cut := copyDataDir(t, dir)
	b2 := openPersistent(t, cut, clock, 0)
	defer b2.Close()
	if _, err := nsOf(t, b2, "ns").CountWorkUnits(ctx, "t"); err == nil {
		t.Fatal("delete_work_spec was answered, but after a crash right after its answer the spec is back")
	}
}
