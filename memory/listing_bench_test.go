package memory

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// Benchmarks of listings at growing spec sizes: what one dashboard page
// or `coordinate work_units` costs, how long another client of the
// namespace waited at most meanwhile (max-wait-ms, see prober) and the
// longest lock hold (max-hold-ms, see holdTimer). Run with e.g.
//
//	go test -run '^$' -bench 'ListPage' -benchtime 20x ./memory/
//
// ns/op is per listing call. Sizes are queueSizes, or COORD_BENCH_UNITS
// alone when it is set (10M units take several GB). The first listing by
// key of a spec builds its key index (BenchmarkKeyIndexBuild); the pages
// are timed after it.

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

// prober stands for the namespace's other clients while a benchmark
// runs: it calls CountWorkUnits about every 0.2 ms and keeps the longest
// it waited (max-wait-ms), which is how long the benchmark's calls held
// the namespace lock at most, plus the machine's scheduling delays.
type prober struct {
	stop, done chan struct{}
	worst      time.Duration
}

func startProber(b *testing.B, ns *namespace) *prober {
	p := &prober{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			t := time.Now()
			if _, err := ns.CountWorkUnits(context.Background(), "s"); err != nil && !errors.Is(err, coordinate.ErrNoSuchWorkSpec) {
				b.Error(err)
				return
			}
			p.worst = max(p.worst, time.Since(t))
			time.Sleep(200 * time.Microsecond)
		}
	}()
	return p
}

// report stops the prober and reports the longest wait.
func (p *prober) report(b *testing.B) {
	close(p.stop)
	<-p.done
	b.ReportMetric(float64(p.worst.Microseconds())/1000, "max-wait-ms")
}

// holdTimer measures the longest lock hold of a long call (max-hold-ms)
// through the namespace's betweenChunks and relocked hooks: from the call
// (or from taking the lock back) to letting go of it (or to returning).
// Unlike max-wait-ms it excludes the machine's scheduling delays of other
// goroutines, though not those of the holder (preempted while it holds
// the lock): on a loaded machine the mean hold says more than the longest.
//
// With cpu set (the holder's goroutine locked to its thread, Linux), it
// also reports the most CPU time one hold used (max-hold-cpu-ms): the work
// in a hold, without the time the machine kept the holder off a CPU.
type holdTimer struct {
	since        time.Time
	longest, sum time.Duration
	holds        int
	cpu          bool
	cpuSince     time.Duration
	cpuLongest   time.Duration
}

func watchHolds(ns *namespace) *holdTimer {
	h := &holdTimer{}
	h.watch(ns)
	return h
}

// watch times ns's holds too.
func (h *holdTimer) watch(ns *namespace) {
	ns.betweenChunks = h.release
	ns.relocked = h.start
}

func (h *holdTimer) start() {
	h.since = time.Now()
	if h.cpu {
		h.cpuSince = threadCPU()
	}
}

func (h *holdTimer) release() {
	d := time.Since(h.since)
	h.longest, h.sum, h.holds = max(h.longest, d), h.sum+d, h.holds+1
	if h.cpu {
		h.cpuLongest = max(h.cpuLongest, threadCPU()-h.cpuSince)
	}
}

// report reports the longest hold and the mean one (mean-hold-ms).
func (h *holdTimer) report(b *testing.B) {
	b.ReportMetric(float64(h.longest.Microseconds())/1000, "max-hold-ms")
	b.ReportMetric(float64(h.sum.Microseconds())/1000/float64(max(h.holds, 1)), "mean-hold-ms")
	if h.cpu {
		b.ReportMetric(float64(h.cpuLongest.Microseconds())/1000, "max-hold-cpu-ms")
	}
}

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
				p := startProber(b, ns)
				h := watchHolds(ns)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					q := tc.q
					q.Start = fmt.Sprintf("q%09d", rng.IntN(size))
					h.start()
					us, err := ns.ListWorkUnits(ctx, "s", q)
					h.release()
					if err != nil || len(us) == 0 {
						b.Fatalf("ListWorkUnits = %d units, %v", len(us), err)
					}
				}
				b.StopTimer()
				p.report(b)
				h.report(b)
			})
		}
	}
}

// benchFreshCalls times call b.N times, each on a namespace fresh from
// setup (untimed), with a prober beside it and its lock holds timed by h,
// and reports the longest any prober waited (max-wait-ms) and h's holds.
func benchFreshCalls(b *testing.B, h *holdTimer, setup func() *namespace, call func(ctx context.Context, ns *namespace) error) {
	var worst time.Duration
	for range b.N {
		b.StopTimer()
		ns := setup()
		p := startProber(b, ns)
		h.watch(ns)
		b.StartTimer()
		h.start()
		if err := call(b.Context(), ns); err != nil {
			b.Fatal(err)
		}
		h.release()
		b.StopTimer()
		close(p.stop)
		<-p.done
		worst = max(worst, p.worst)
		b.StartTimer()
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "max-wait-ms")
	h.report(b)
}

// BenchmarkKeyIndexBuild times the first listing by key of a spec, which
// builds its key index, and the longest another client waited meanwhile.
func BenchmarkKeyIndexBuild(b *testing.B) {
	for _, size := range listSizes(b) {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			benchFreshCalls(b, &holdTimer{}, func() *namespace {
				ns, ctx := benchNamespace(b)
				fill(b, ns, ctx, "q", size)
				return ns
			}, func(ctx context.Context, ns *namespace) error {
				_, err := ns.ListWorkUnits(ctx, "s", coordinate.WorkUnitQuery{Limit: 100})
				return err
			})
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
				benchAdds(b, ns, ctx, func(i int) string {
					if random {
						return fmt.Sprintf("q%016x", rng.Uint64())
					}
					return fmt.Sprintf("n%09d", i)
				})
			})
		}
	}
}

// BenchmarkSpecScans times the calls that visit every unit of a spec
// (docs/architecture.md, "Deleting and archiving in chunks"): ns/op is one
// call, max-hold-ms and mean-hold-ms its lock holds (the whole call before
// unitdelete.go), max-wait-ms the longest a CountWorkUnits prober beside
// it waited. Each call runs on a fresh spec of the given size, a tenth of
// it FAILED (listSpec); delete-spec-grouped has one more unit, in a group,
// so that the spec's units are walked (dropspec.go).
func BenchmarkSpecScans(b *testing.B) {
	failed := []coordinate.Status{coordinate.StatusFailed}
	deleteSpec := func(ctx context.Context, ns *namespace) error { return ns.DeleteWorkSpec(ctx, "s") }
	for _, tc := range []struct {
		name  string
		setup func(ctx context.Context, ns *namespace) error
		call  func(ctx context.Context, ns *namespace) error
	}{
		{"delete-failed", nil, func(ctx context.Context, ns *namespace) error {
			_, err := ns.DeleteWorkUnits(ctx, "s", coordinate.DeleteQuery{Statuses: failed})
			return err
		}},
		{"delete-all", nil, func(ctx context.Context, ns *namespace) error {
			_, err := ns.DeleteWorkUnits(ctx, "s", coordinate.DeleteQuery{All: true})
			return err
		}},
		{"archive-failed", nil, func(ctx context.Context, ns *namespace) error {
			return ns.Archive(ctx, []string{"s"}, coordinate.RetentionPolicy{MaxCount: 0})
		}},
		{"delete-spec", nil, deleteSpec},
		{"delete-spec-grouped", func(ctx context.Context, ns *namespace) error {
			return ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "grouped", Text: true}, Data: smallData, Group: "g"}})
		}, deleteSpec},
	} {
		for _, size := range listSizes(b) {
			b.Run(fmt.Sprintf("%s/%d", tc.name, size), func(b *testing.B) {
				// The calls run on this goroutine: kept on one thread,
				// the holds' CPU time is that thread's.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				benchFreshCalls(b, &holdTimer{cpu: haveThreadCPU}, func() *namespace {
					ns := listSpec(b, size)
					if tc.setup != nil {
						if err := tc.setup(b.Context(), ns); err != nil {
							b.Fatal(err)
						}
					}
					return ns
				}, tc.call)
			})
		}
	}
}
