package memory

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// Benchmarks of the hot paths at growing queue sizes. Run with e.g.
//
//	go test -run '^$' -bench 'Add|GetWork|Count' -benchmem -benchtime 100000x ./memory/
//	go test -run '^$' -bench QueuedUnitMemory -benchtime 1x ./memory/
//
// ns/op is per unit; heap-B/unit is the live heap per queued unit.

var queueSizes = []int{10_000, 100_000, 1_000_000}

// smallData is a typical small unit data map: {"i": 1234}.
var smallData = coordinate.Data{0xa1, 0x61, 'i', 0x19, 0x04, 0xd2}

func benchNamespace(b testing.TB) (*namespace, context.Context) {
	b.Helper()
	ns := newNamespace("", Options{Clock: coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), StallTimeout: coordinate.DefaultStallTimeout})
	ctx := context.Background()
	defineSpec(b, ctx, ns, "s")
	return ns, ctx
}

// fill adds n units keyed prefix+index in batches, as `coordinate load` does.
func fill(b testing.TB, ns *namespace, ctx context.Context, prefix string, n int) {
	b.Helper()
	const batch = 10_000
	units := make([]coordinate.WorkUnitInput, 0, batch)
	for i := 0; i < n; i++ {
		units = append(units, coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("%s%09d", prefix, i), Text: true}, Data: smallData})
		if len(units) == batch || i == n-1 {
			if err := ns.AddWorkUnits(ctx, "s", units); err != nil {
				b.Fatal(err)
			}
			units = units[:0]
		}
	}
}

func BenchmarkAddWorkUnits(b *testing.B) {
	for _, size := range queueSizes {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			ns, ctx := benchNamespace(b)
			fill(b, ns, ctx, "q", size)
			benchAdds(b, ns, ctx, func(i int) string { return fmt.Sprintf("n%09d", i) })
		})
	}
}

// benchAdds times adding b.N units to spec "s", 100 per call, the i-th
// with key(i).
func benchAdds(b *testing.B, ns *namespace, ctx context.Context, key func(i int) string) {
	units := make([]coordinate.WorkUnitInput, 100)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i += len(units) {
		for j := range units {
			units[j] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: key(i + j), Text: true}, Data: smallData}
		}
		if err := ns.AddWorkUnits(ctx, "s", units); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

func BenchmarkGetWorkAndFinish(b *testing.B) {
	for _, size := range queueSizes {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			ns, ctx := benchNamespace(b)
			// Enough units that the queue stays at least size long.
			fill(b, ns, ctx, "q", size+b.N)
			req := coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}, LeaseTime: time.Minute, MaxJobs: 1}
			finish := coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			defer reportCPU(b, cpu0)
			for i := 0; i < b.N; i++ {
				as, err := ns.GetWork(ctx, req)
				if err != nil || len(as) != 1 {
					b.Fatalf("GetWork = %d attempts, %v", len(as), err)
				}
				a := as[0]
				if err := ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "s", Key: a.Key.Bytes, ID: a.ID}, finish); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// reportCPU reports the process's CPU time per op since cpu0 (user +
// system, the collector's included): steadier than ns/op on a shared
// machine, where ns/op also counts the time spent waiting for a core.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkCountWorkUnits(b *testing.B) {
	for _, size := range queueSizes {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			ns, ctx := benchNamespace(b)
			fill(b, ns, ctx, "q", size)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := ns.CountWorkUnits(ctx, "s"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkQueuedUnitMemory reports the live heap per queued unit after
// adding 1M small units. The measurement is taken once, whatever b.N, so
// run it with -benchtime 1x.
func BenchmarkQueuedUnitMemory(b *testing.B) {
	perUnit, indexed := heapPerUnit(b, 1_000_000)
	for range b.N {
	}
	b.ReportMetric(perUnit, "heap-B/unit")
	b.ReportMetric(indexed, "indexed-heap-B/unit")
}

// heapPerUnit measures the live heap growth per unit when n small units
// are queued, then again once a listing by key has built the spec's key
// index (keyindex.go).
func heapPerUnit(tb testing.TB, n int) (perUnit, indexed float64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ns, ctx := benchNamespace(tb)
	fill(tb, ns, ctx, "unit-", n)
	runtime.GC()
	runtime.ReadMemStats(&after)
	perUnit = float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
	if _, err := ns.ListWorkUnits(ctx, "s", coordinate.WorkUnitQuery{Limit: 1}); err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(ns)
	return perUnit, float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// TestQueuedUnitMemory holds the backend to its memory budget: under 400
// bytes of live heap per queued unit with small data, key index or not.
func TestQueuedUnitMemory(t *testing.T) {
	perUnit, indexed := heapPerUnit(t, 100_000)
	if perUnit >= 400 || indexed >= 400 {
		t.Errorf("%.0f bytes of heap per queued unit (%.0f with the key index), want < 400", perUnit, indexed)
	} else {
		t.Logf("%.0f bytes of heap per queued unit, %.0f with the key index", perUnit, indexed)
	}
}
