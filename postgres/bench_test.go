package postgres

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// Benchmarks of the workloads docs/postgres.md reports. They need COORDINATE_TEST_POSTGRES
// like the tests. Queue sizes come from COORDINATE_BENCH_QUEUED (comma
// separated, default "10000,100000"; add 1000000 by hand, it takes a while
// to fill). Concurrency comes from COORDINATE_BENCH_CLIENTS (default 32).
//
//	go test -run '^$' -bench . -benchtime 20000x ./postgres

func benchSizes(b *testing.B) []int {
	s := os.Getenv("COORDINATE_BENCH_QUEUED")
	if s == "" {
		s = "10000,100000"
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("COORDINATE_BENCH_QUEUED: bad size %q", f)
		}
		out = append(out, n)
	}
	return out
}

func benchClients() int {
	if n, err := strconv.Atoi(os.Getenv("COORDINATE_BENCH_CLIENTS")); err == nil && n > 0 {
		return n
	}
	return 32
}

// benchNamespace returns a namespace of a fresh Backend on a fresh schema
// with one spec "s".
func benchNamespace(b *testing.B) coordinate.Namespace {
	b.Helper()
	ctx := context.Background()
	be, err := New(ctx, freshSchema(b), Options{MaxConns: int32(benchClients() + 4)})
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	b.Cleanup(func() { be.Close() })
	ns, err := be.Namespace(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	def, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns.SetWorkSpec(ctx, def); err != nil {
		b.Fatal(err)
	}
	return ns
}

// checkpoint forces a PostgreSQL checkpoint (the test database user is a
// superuser; a failure only makes the figures noisier).
func checkpoint(b *testing.B) {
	be, err := pgx.Connect(context.Background(), testURL(b))
	if err != nil {
		b.Logf("checkpoint: %v", err)
		return
	}
	defer be.Close(context.Background())
	if _, err := be.Exec(context.Background(), "CHECKPOINT"); err != nil {
		b.Logf("checkpoint: %v", err)
	}
}

// walMeter starts measuring the WAL the database writes (every session's:
// the throwaway test server has no other users), a figure the machine's
// load does not change; the returned func reports it per unit.
func walMeter(b *testing.B) func(units int64) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testURL(b))
	if err != nil {
		b.Fatal(err)
	}
	var start string
	if err := conn.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&start); err != nil {
		b.Fatal(err)
	}
	return func(units int64) {
		defer conn.Close(ctx)
		var n float64
		if err := conn.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)", start).Scan(&n); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(n/float64(units), "WAL-B/unit")
	}
}

var benchData = func() coordinate.Data {
	d, _ := cbor.Marshal(map[string]any{"url": "http://example.com/some/page", "n": 12345})
	return d
}()

// fill adds n units with keys prefix%09d in batches of 1000, then
// checkpoints so the timed part does not pay for the fill's WAL.
func fill(b *testing.B, ns coordinate.Namespace, prefix string, n int) {
	b.Helper()
	defer checkpoint(b)
	b.Helper()
	const batch = 1000
	in := make([]coordinate.WorkUnitInput, 0, batch)
	for i := 0; i < n; i++ {
		in = append(in, coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("%s%09d", prefix, i), Text: true}, Data: benchData})
		if len(in) == batch || i == n-1 {
			if err := ns.AddWorkUnits(context.Background(), "s", in); err != nil {
				b.Fatal(err)
			}
			in = in[:0]
		}
	}
}

// BenchmarkAdd adds units in add_work_units calls of 1000 from 4 clients
// on top of a queue of each size.
func BenchmarkAdd(b *testing.B) {
	for _, size := range benchSizes(b) {
		b.Run(fmt.Sprintf("queued=%d", size), func(b *testing.B) {
			ns := benchNamespace(b)
			fill(b, ns, "q", size)
			const clients, batch = 4, 1000
			var next atomic.Int64
			wal := walMeter(b)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for c := 0; c < clients; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					in := make([]coordinate.WorkUnitInput, 0, batch)
					for {
						first := next.Add(batch) - batch
						if first >= int64(b.N) {
							return
						}
						in = in[:0]
						for i := first; i < min(first+batch, int64(b.N)); i++ {
							in = append(in, coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("a%09d", i), Text: true}, Data: benchData})
						}
						if err := ns.AddWorkUnits(context.Background(), "s", in); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "units/s")
			wal(int64(b.N))
		})
	}
}

// BenchmarkDrain: clients loop GetWork(max_jobs) + UpdateAttempt(finished)
// for each unit, as legacy workers do, on a queue of each size.
func BenchmarkDrain(b *testing.B) {
	for _, perCall := range []int{1, 100} {
		for _, size := range benchSizes(b) {
			b.Run(fmt.Sprintf("perCall=%d/queued=%d", perCall, size), func(b *testing.B) {
				benchDrain(b, perCall, size, 0)
			})
		}
	}
}

// BenchmarkDrainSequential is BenchmarkDrain as legacy workers drain
// through the daemon: each client finishes its units one call at a time,
// so a committer batch holds at most one request per client (with the
// default 8 clients, what coordbench's drain1 and drain100 at 8
// connections give the backend).
func BenchmarkDrainSequential(b *testing.B) {
	for _, perCall := range []int{1, 100} {
		b.Run(fmt.Sprintf("perCall=%d/queued=%d", perCall, benchSizes(b)[0]), func(b *testing.B) {
			benchDrainWith(b, perCall, benchSizes(b)[0], 0, true)
		})
	}
}

// BenchmarkDrainMaxRunning is BenchmarkDrain on a spec whose max_running
// is set but never reached: what the exact max_running gate
// (maxrunning.go) costs, to compare with BenchmarkDrain in the same run.
func BenchmarkDrainMaxRunning(b *testing.B) {
	for _, perCall := range []int{1, 100} {
		b.Run(fmt.Sprintf("perCall=%d/queued=%d", perCall, benchSizes(b)[0]), func(b *testing.B) {
			benchDrain(b, perCall, benchSizes(b)[0], 1<<30)
		})
	}
}

// benchReplyBytes is the reply byte budget the daemon passes to GetWork
// by default (jobserver.DefaultMaxReplyBytes).
const benchReplyBytes = 64 << 20

func benchDrain(b *testing.B, perCall, size, maxRunning int) {
	benchDrainWith(b, perCall, size, maxRunning, false)
}

// benchDrainWith is benchDrain; with sequential each client finishes its
// units one after another instead of all at once.
func benchDrainWith(b *testing.B, perCall, size, maxRunning int, sequential bool) {
	ns := benchNamespace(b)
	if maxRunning != 0 {
		if err := ns.ControlWorkSpec(context.Background(), "s", coordinate.WorkSpecControl{MaxRunning: &maxRunning}); err != nil {
			b.Fatal(err)
		}
	}
	fill(b, ns, "q", size+b.N+perCall*benchClients())
	clients := benchClients()
	if perCall > 1 && !sequential {
		clients = min(clients, 8)
	}
	var done atomic.Int64
	wal := walMeter(b)
	cpu := cpuMeter(b)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := coordinate.Name{Bytes: fmt.Sprintf("w%d", c), Text: true}
			for done.Load() < int64(b.N) {
				as, err := ns.GetWork(context.Background(), coordinate.WorkRequest{Worker: w, MaxJobs: perCall, LeaseTime: time.Hour, MaxBytes: benchReplyBytes})
				if err != nil {
					b.Error(err)
					return
				}
				if len(as) == 0 {
					b.Error("queue ran dry")
					return
				}
				if sequential {
					for _, a := range as {
						err := ns.UpdateAttempt(context.Background(), coordinate.AttemptRef{Spec: a.Spec.Bytes, Key: a.Key.Bytes, ID: a.ID},
							coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
						if err != nil {
							b.Error(err)
							return
						}
					}
					done.Add(int64(len(as)))
					continue
				}
				var fwg sync.WaitGroup
				for _, a := range as {
					fwg.Add(1)
					go func() {
						defer fwg.Done()
						err := ns.UpdateAttempt(context.Background(), coordinate.AttemptRef{Spec: a.Spec.Bytes, Key: a.Key.Bytes, ID: a.ID},
							coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
						if err != nil {
							b.Error(err)
						}
					}()
				}
				fwg.Wait()
				done.Add(int64(len(as)))
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(done.Load())/time.Since(start).Seconds(), "units/s")
	cpu(done.Load())
	wal(done.Load())
}

// cpuMeter starts measuring the CPU time this process (the backend and
// the benchmark's clients; PostgreSQL is another process) uses, a figure
// that moves far less with the machine's load than units/s; the returned
// func reports it per unit.
func cpuMeter(b *testing.B) func(units int64) {
	start := processCPU(b)
	return func(units int64) {
		b.ReportMetric(float64((processCPU(b)-start).Microseconds())/float64(units), "cpu-us/unit")
	}
}

// processCPU is the user and system CPU time this process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
