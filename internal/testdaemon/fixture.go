package testdaemon

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/client"
)

// Populate gives a daemon units in every status: queued ones with three
// priorities, pending, finished with an output chained into ws2, failed
// with a traceback, text and byte keys, tuple data, and a paused spec.
func Populate(t testing.TB, c *client.Client) {
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.SetWorkSpec(ctx, map[any]any{cbor.ByteString("name"): []byte("ws1"), cbor.ByteString("min_gb"): 1, cbor.ByteString("then"): []byte("ws2")}))
	must(c.SetWorkSpec(ctx, map[any]any{cbor.ByteString("name"): []byte("ws2"), cbor.ByteString("min_gb"): 1}))
	must(c.SetWorkSpec(ctx, map[any]any{cbor.ByteString("name"): []byte("ws3"), cbor.ByteString("min_gb"): 0.5, cbor.ByteString("max_running"): 4}))
	var units []client.NewUnit
	for i := range 20 {
		u := client.NewUnit{Key: []byte(fmt.Sprintf("u%02d", i)), Data: map[any]any{cbor.ByteString("i"): i, "t": cborrpc.Tuple{"x", 1.5}}}
		switch i % 7 {
		case 3:
			p := 10.0
			u.Priority = &p
		case 5:
			p := 1.0
			u.Priority = &p
		}
		units = append(units, u)
	}
	units = append(units, client.NewUnit{Key: "text-key", Data: map[any]any{}})
	must(c.AddWorkUnits(ctx, "ws1", units))
	must(c.AddWorkUnits(ctx, "ws3", []client.NewUnit{{Key: []byte("only"), Data: map[any]any{}}}))
	// Lease 5 units of ws1 (the highest priorities), finish two (one with
	// output), fail one; the other two stay pending.
	work, err := c.GetWork(ctx, "w", client.WorkRequest{MaxJobs: 5, WorkSpecNames: []string{"ws1"}, LeaseTime: time.Hour})
	must(err)
	if len(work) != 5 {
		t.Fatalf("leased %d units", len(work))
	}
	must(c.UpdateWorkUnit(ctx, "ws1", work[0].Key, client.UnitUpdate{Status: client.Finished, SetData: true,
		Data: map[any]any{cbor.ByteString("output"): []any{[]byte("child1"), []byte("child2")}}}))
	must(c.UpdateWorkUnit(ctx, "ws1", work[1].Key, client.UnitUpdate{Status: client.Finished}))
	must(c.UpdateWorkUnit(ctx, "ws1", work[2].Key, client.UnitUpdate{Status: client.Failed, SetData: true,
		Data: map[any]any{cbor.ByteString("traceback"): []byte("Traceback: boom")}}))
	must(c.PauseWorkSpec(ctx, "ws3", true))
}
