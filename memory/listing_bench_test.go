package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// Benchmarks of listings at growing spec sizes: what one dashboard page
// or `coordinate work_units` costs, and how long it holds the namespace
// lock at most (max-hold-ms: the longest stretch between taking the lock
// and letting go of it, from the betweenChunks hook). Run with e.g.
//
//	go test -run '^$' -bench 'ListPage' -benchtime 20x ./memory/
//
// ns/op is per listing call. Sizes are queueSizes, or COORD_BENCH_UNITS
// alone when it is set (above 2M units, under flock /tmp/bigrun.lock). The first listing by key of a spec builds its
// key index (BenchmarkKeyIndexBuild); the pages are timed after it.

// listSizes are the spec sizes of the listing benchmarks.
func listSizes(b *testing.B) []int {
	if os.Getenv("COORD_BENCH_UNITS") != "" {
		return []int{benchUnits(b)}
	}
	return queueSizes
}

// listSpec fills a spec with n units, every tenth FAILED, and lists it
// once by key (building its key index).
func listSpec(b *testing.B, n int) *namespace {
	ns, ctx := benchNamespace(b)
	fill(b, ns, ctx, "q", n)
	for i := 0; i < n; i += 10 {
		if err := ns.UpdateWorkUnit(ctx, "s", fmt.Sprintf("q%09d", i), coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := ns.ListWorkUnits(ctx, "s", coordinate.WorkUnitQuery{Limit: 1}); err != nil {
		b.Fatal(err)
	}
	return ns
}

// holdTimer measures the longest lock hold of the calls it watches.
type holdTimer struct {
	since   time.Time
	longest time.Duration
}

func (h *holdTimer) begin() { h.since = time.Now() }
func (h *holdTimer) yield() {
	h.longest = max(h.longest, time.Since(h.since))
	h.since = time.Now()
}
func (h *holdTimer) end() { h.yield() }

func BenchmarkListPage(b *testing.B) {
	failed := []coordinate.Status{coordinate.StatusFailed}
	for _, size := range listSizes(b) {
		ns := listSpec(b, size)
		for _, tc := range []struct {
			name string
			q    coordinate.WorkUnitQuery
		}{
			{"key", coordinate.WorkUnitQuery{Limit: 100}},
			{"failed-key", coordinate.WorkUnitQuery{Statuses: failed, KeyOrder: true, Limit: 100}},
			{"failed-priority", coordinate.WorkUnitQuery{Statuses: failed, Limit: 100}},
		} {
			b.Run(fmt.Sprintf("%s/%d", tc.name, size), func(b *testing.B) {
				ctx := b.Context()
				rng := rand.New(rand.NewPCG(1, 2))
				h := &holdTimer{}
				setBetweenChunks(ns, h.yield)
				defer setBetweenChunks(ns, nil)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					q := tc.q
					q.Start = fmt.Sprintf("q%09d", rng.IntN(size))
					h.begin()
					us, err := ns.ListWorkUnits(ctx, "s", q)
					h.end()
					if err != nil || len(us) == 0 {
						b.Fatalf("ListWorkUnits = %d units, %v", len(us), err)
					}
				}
				b.ReportMetric(float64(h.longest.Microseconds())/1000, "max-hold-ms")
			})
		}
	}
}

// BenchmarkKeyIndexBuild times the first listing by key of a spec, which
// builds its key index, and its longest lock hold.
func BenchmarkKeyIndexBuild(b *testing.B) {
	for _, size := range listSizes(b) {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			h := &holdTimer{}
			var took time.Duration
			for range b.N {
				b.StopTimer()
				ns, ctx := benchNamespace(b)
				fill(b, ns, ctx, "q", size)
				setBetweenChunks(ns, h.yield)
				b.StartTimer()
				start := time.Now()
				h.begin()
				if _, err := ns.ListWorkUnits(ctx, "s", coordinate.WorkUnitQuery{Limit: 100}); err != nil {
					b.Fatal(err)
				}
				h.end()
				took = time.Since(start)
			}
			b.ReportMetric(float64(took.Microseconds())/1000, "build-ms")
			b.ReportMetric(float64(h.longest.Microseconds())/1000, "max-hold-ms")
		})
	}
}

// BenchmarkAddWorkUnitsIndexed is BenchmarkAddWorkUnits on a spec whose
// key index is built: what keeping the index costs an add, with keys that
// ascend (seq: always at the index's end) and random keys.
func BenchmarkAddWorkUnitsIndexed(b *testing.B) {
	for _, random := range []bool{false, true} {
		for _, size := range queueSizes {
			name := fmt.Sprintf("seq/%d", size)
			if random {
				name = fmt.Sprintf("random/%d", size)
			}
			b.Run(name, func(b *testing.B) {
				ns, ctx := benchNamespace(b)
				fill(b, ns, ctx, "q", size)
				if _, err := ns.ListWorkUnits(ctx, "s", coordinate.WorkUnitQuery{Limit: 1}); err != nil {
					b.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(1, 2))
				units := make([]coordinate.WorkUnitInput, 100)
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := processCPU()
				for i := 0; i < b.N; i += len(units) {
					for j := range units {
						k := fmt.Sprintf("n%09d", i+j)
						if random {
							k = fmt.Sprintf("q%016x", rng.Uint64())
						}
						units[j] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: k, Text: true}, Data: smallData}
					}
					if err := ns.AddWorkUnits(ctx, "s", units); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, cpu0)
			})
		}
	}
}

// BenchmarkSpecScans times the calls that still visit every unit of a
// spec under the namespace lock (docs/architecture.md, "Listing units
// without stalling the namespace"): ns/op is one call, all of it a lock
// hold. Each call runs on a fresh spec of the given size, a tenth of it
// FAILED (listSpec).
func BenchmarkSpecScans(b *testing.B) {
	failed := []coordinate.Status{coordinate.StatusFailed}
	for _, tc := range []struct {
		name string
		call func(ctx context.Context, ns *namespace) error
	}{
		{"delete-failed", func(ctx context.Context, ns *namespace) error {
			_, err := ns.DeleteWorkUnits(ctx, "s", coordinate.DeleteQuery{Statuses: failed})
			return err
		}},
		{"archive-failed", func(ctx context.Context, ns *namespace) error {
			return ns.Archive(ctx, []string{"s"}, coordinate.RetentionPolicy{MaxCount: 0})
		}},
		{"delete-spec", func(ctx context.Context, ns *namespace) error {
			return ns.DeleteWorkSpec(ctx, "s")
		}},
	} {
		for _, size := range listSizes(b) {
			b.Run(fmt.Sprintf("%s/%d", tc.name, size), func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					ns := listSpec(b, size)
					b.StartTimer()
					if err := tc.call(b.Context(), ns); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
