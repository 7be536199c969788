package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/memory"
)

// queued returns a web server over a volatile memory backend holding n
// AVAILABLE units in spec "big" and 20 small specs.
func queued(b *testing.B, n int) (*Server, coordinate.Namespace) {
	b.Helper()
	ctx := context.Background()
	mb := memory.New(memory.Options{})
	b.Cleanup(func() { mb.Close() })
	ns, _ := mb.Namespace(ctx, "")
	def := func(name string) coordinate.Data {
		return coordinate.Data(append([]byte{0xa1, 0x64, 'n', 'a', 'm', 'e', 0x60 + byte(len(name))}, name...))
	}
	for i := range 20 {
		if _, err := ns.SetWorkSpec(ctx, def(fmt.Sprintf("s%02d", i))); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := ns.SetWorkSpec(ctx, def("big")); err != nil {
		b.Fatal(err)
	}
	const batch = 10_000
	for i := 0; i < n; i += batch {
		in := make([]coordinate.WorkUnitInput, min(batch, n-i))
		for j := range in {
			in[j] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("u%08d", i+j)}, Data: coordinate.EmptyMap}
		}
		if err := ns.AddWorkUnits(ctx, "big", in); err != nil {
			b.Fatal(err)
		}
	}
	return New(Options{Namespace: ns, Backend: mb, Logger: quietLog()}), ns
}

func benchGet(b *testing.B, s *Server, path string) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d", path, rec.Code)
		}
	}
}

// A scrape and the dashboard's pages with 1,000,000 units queued.
func BenchmarkQueued1M(b *testing.B) {
	s, _ := queued(b, 1_000_000)
	b.Run("metrics", func(b *testing.B) { benchGet(b, s, "/metrics") })
	b.Run("summary", func(b *testing.B) { benchGet(b, s, "/") })
	b.Run("specs", func(b *testing.B) { benchGet(b, s, "/ui/") })
	// A spec page lists its best available units from the heap; a
	// listing by key scans the spec's units.
	b.Run("spec-page", func(b *testing.B) { benchGet(b, s, "/ui/spec?name=big") })
	b.Run("spec-page-10th", func(b *testing.B) { benchGet(b, s, "/ui/spec?name=big&status=available&offset=900") })
	b.Run("spec-by-key", func(b *testing.B) { benchGet(b, s, "/ui/spec?name=big&prefix=u0099") })
}

// The drain rate of 200,000 units (get_work and finish, 4
// workers), with nobody watching and with the dashboard and /metrics
// fetched every 100 ms. Compare the two units/s figures.
func BenchmarkDrainWithDashboard(b *testing.B) {
	for _, watch := range []bool{false, true} {
		b.Run(map[bool]string{false: "quiet", true: "refreshing"}[watch], func(b *testing.B) {
			const n = 200_000
			var done int
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				s, ns := queued(b, n)
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				if watch {
					wg.Go(func() {
						t := time.NewTicker(100 * time.Millisecond)
						defer t.Stop()
						for {
							for _, p := range []string{"/ui/", "/ui/spec?name=big", "/metrics"} {
								s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", p, nil))
							}
							select {
							case <-ctx.Done():
								return
							case <-t.C:
							}
						}
					})
				}
				b.StartTimer()
				start := time.Now()
				var workers sync.WaitGroup
				for w := range 4 {
					workers.Go(func() {
						worker := coordinate.Name{Bytes: fmt.Sprintf("w%d", w)}
						for {
							as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, LeaseTime: time.Minute, MaxJobs: 10, WorkSpecs: []string{"big"}})
							if err != nil || len(as) == 0 {
								return
							}
							for _, a := range as {
								if err := ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "big", Key: a.Key.Bytes, ID: a.ID},
									coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
									b.Error(err)
									return
								}
							}
						}
					})
				}
				workers.Wait()
				elapsed += time.Since(start)
				done += n
				b.StopTimer()
				cancel()
				wg.Wait()
				b.StartTimer()
			}
			b.ReportMetric(float64(done)/elapsed.Seconds(), "units/s")
		})
	}
}

type nopHandler struct{}

func (nopHandler) Handle(context.Context, *cborrpc.Request) (any, error) { return nil, nil }

// What the RPC metrics add to each request, from 4 goroutines.
func BenchmarkRPCMetricsOverhead(b *testing.B) {
	s := New(Options{Namespace: memoryNamespace(b), Logger: quietLog()})
	req := &cborrpc.Request{Method: "get_work"}
	for _, c := range []struct {
		name string
		h    cborrpc.Handler
	}{{"bare", nopHandler{}}, {"measured", s.RPCHandler(nopHandler{}, func(string) bool { return true })}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetParallelism(2)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c.h.Handle(context.Background(), req)
				}
			})
		})
	}
}

func memoryNamespace(b *testing.B) coordinate.Namespace {
	b.Helper()
	mb := memory.New(memory.Options{})
	ns, _ := mb.Namespace(context.Background(), "")
	return ns
}
