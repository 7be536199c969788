package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// BenchmarkDeleteSpec times deleting a spec of n units (queueSizes, or
// COORD_BENCH_UNITS), 100 of them leased by a registered worker: path=walk
// removes every unit in key order in one hold, as before dropspec.go
// (state.walkSpecDeletes); path=fast drops the spec whole; path=lookups
// has units elsewhere waiting for more keys of the spec's name, none of
// its units, than it has units (which canDropWhole once looked up one by
// one; spec.waited now says it in O(1)). ns/op is one DeleteWorkSpec call,
// max-hold-ms and mean-hold-ms its lock holds (holdTimer). Compare with
//
//	go test -run '^$' -bench DeleteSpec -count 6 ./memory/ | benchstat -col /path -
func BenchmarkDeleteSpec(b *testing.B) {
	for _, size := range listSizes(b) {
		for _, path := range []string{"walk", "fast", "lookups"} {
			b.Run(fmt.Sprintf("path=%s/units=%d", path, size), func(b *testing.B) {
				h := &holdTimer{}
				for range b.N {
					b.StopTimer()
					ns, ctx := benchNamespace(b)
					fill(b, ns, ctx, "q", size)
					if path == "lookups" {
						waitForMissing(b, ns, size+1)
					}
					w := coordinate.Name{Bytes: "w", Text: true}
					if err := ns.WorkerHeartbeat(ctx, coordinate.Heartbeat{Worker: w, Mode: coordinate.Null, Data: coordinate.EmptyMap, Expire: time.Hour}); err != nil {
						b.Fatal(err)
					}
					if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: w, LeaseTime: time.Minute, MaxJobs: 100}); err != nil {
						b.Fatal(err)
					}
					ns.st.walkSpecDeletes = path == "walk"
					h.watch(ns)
					b.StartTimer()
					h.start()
					if err := ns.DeleteWorkSpec(ctx, "s"); err != nil {
						b.Fatal(err)
					}
					h.release()
				}
				h.report(b)
			})
		}
	}
}

// waitForMissing adds to a spec "o" n units each waiting for a unit of
// spec "s" that does not exist: n dependency targets named for "s", none
// of its units.
func waitForMissing(b *testing.B, ns *namespace, n int) {
	ctx := context.Background()
	defineSpec(b, ctx, ns, "o")
	const batch = 10_000
	var units []coordinate.WorkUnitInput
	for i := range n {
		units = append(units, coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprint("o", i), Text: true}, Data: smallData,
			DependsOn: []coordinate.UnitRef{{Spec: "s", Key: fmt.Sprint("missing", i)}}})
		if len(units) == batch || i == n-1 {
			if err := ns.AddWorkUnits(ctx, "o", units); err != nil {
				b.Fatal(err)
			}
			units = units[:0]
		}
	}
	if len(ns.st.dependents) <= len(ns.st.specs["s"].units) {
		b.Fatal("fewer dependency targets than units: not the case path=lookups is about")
	}
}
