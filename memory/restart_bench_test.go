package memory

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// BenchmarkRestart times what a restart after kill -9 costs: Open on a
// data directory holding a snapshot of COORD_BENCH_UNITS units (default
// 1M, a tenth of them leased) and the journal written after it
// (COORD_BENCH_TAIL bytes, default 64 MiB = the default -snapshot-bytes:
// added units, leases and finishes), until the backend is ready.
//
// COORD_BENCH_DIR names a directory to build the data in once and reuse
// (so old and new code can be timed on the same files, and a process that
// only opens shows recovery's own peak RSS as maxrss-MB); without it a
// temporary directory is built on every run. Each Open leaves the
// directory as a crash would (no final snapshot), so reopening replays
// the same state.
//
// Metrics: recover-ms (Open until ready), gc-cpu-ms (the collector's CPU
// time during Open), maxrss-MB (the process's peak RSS so far), and the
// phases Open logs, where it does (*-ms).
func BenchmarkRestart(b *testing.B) {
	units, tail := benchUnits(b), benchTail(b)
	dir := os.Getenv("COORD_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	ctx := context.Background()
	opts := Options{Clock: coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		DataDir: dir, Sync: journal.SyncNone, SnapshotBytes: 1 << 40, Logger: quietLogger()}
	ready := filepath.Join(dir, fmt.Sprintf("bench-restart-%d-%d", units, tail))
	if _, err := os.Stat(ready); err != nil {
		buildRestartDir(b, opts, units, tail)
		if err := os.WriteFile(ready, nil, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	phases := &phaseLog{took: map[string]time.Duration{}}
	opts.Logger = slog.New(phases)
	runtime.GC()
	b.ResetTimer()
	var took, gc time.Duration
	for range b.N {
		gc0 := gcCPU()
		start := time.Now()
		be, err := Open(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		took = time.Since(start)
		gc = gcCPU() - gc0
		crashClose(be)
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
	}
	b.ReportMetric(float64(took.Microseconds())/1000, "recover-ms")
	b.ReportMetric(float64(gc.Microseconds())/1000, "gc-cpu-ms")
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MB")
	}
	phases.mu.Lock()
	defer phases.mu.Unlock()
	for k, d := range phases.took {
		b.ReportMetric(float64(d.Microseconds())/1000, k+"-ms")
	}
}

// benchTail returns COORD_BENCH_TAIL, the bytes of journal a restart
// benchmark replays (default 64 MiB, the default -snapshot-bytes).
func benchTail(b *testing.B) int64 {
	s := os.Getenv("COORD_BENCH_TAIL")
	if s == "" {
		return DefaultSnapshotBytes
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		b.Fatalf("COORD_BENCH_TAIL=%q: want a byte count", s)
	}
	return n
}

// buildRestartDir writes the state BenchmarkRestart recovers: a snapshot
// of units units, then about tail bytes of journal.
func buildRestartDir(b *testing.B, opts Options, units int, tail int64) {
	ctx := context.Background()
	be, err := Open(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	nsi, _ := be.Namespace(ctx, "")
	ns := nsi.(*namespace)
	defineSpec(b, ctx, ns, "s")
	fill(b, ns, ctx, "q", units)
	worker := coordinate.Name{Bytes: "w"}
	if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, LeaseTime: time.Hour, MaxJobs: units / 10}); err != nil {
		b.Fatal(err)
	}
	if _, err := be.Snapshot(ctx); err != nil {
		b.Fatal(err)
	}
	writeTail(b, be, ns, tail)
	crashClose(be)
}

// writeTail journals about tail bytes of spec "s" of ns: batches of new
// units, and leases of 100 finished one by one.
func writeTail(b *testing.B, be *Backend, ns *namespace, tail int64) {
	ctx := context.Background()
	worker := coordinate.Name{Bytes: "w"}
	base := be.JournalStats().Bytes
	done := coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}
	for round := 0; int64(be.JournalStats().Bytes-base) < tail; round++ {
		fill(b, ns, ctx, fmt.Sprintf("t%06d-", round), 1000)
		as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, LeaseTime: time.Hour, MaxJobs: 100})
		if err != nil {
			b.Fatal(err)
		}
		for _, a := range as {
			if err := ns.UpdateWorkUnit(ctx, "s", a.Key.Bytes, done); err != nil {
				b.Fatal(err)
			}
		}
	}
	crashClose(be)
}

// gcCPU returns the collector's CPU time so far.
func gcCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}

// phaseLog is a slog handler keeping the durations logged by the messages
// about recovery, under "message.attribute" (spaces become '_').
type phaseLog struct {
	mu   sync.Mutex
	took map[string]time.Duration
}

func (p *phaseLog) Enabled(context.Context, slog.Level) bool { return true }
func (p *phaseLog) WithAttrs([]slog.Attr) slog.Handler       { return p }
func (p *phaseLog) WithGroup(string) slog.Handler            { return p }
func (p *phaseLog) Handle(_ context.Context, r slog.Record) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.Attrs(func(a slog.Attr) bool {
		if a.Value.Kind() == slog.KindDuration {
			name := []byte(r.Message + "." + a.Key)
			for i, c := range name {
				if c == ' ' {
					name[i] = '_'
				}
			}
			p.took[string(name)] = a.Value.Duration()
		}
		return true
	})
	return nil
}

// BenchmarkSnapshotLoad decodes and builds a snapshot of COORD_BENCH_UNITS
// units (default 1M, a tenth leased) held in memory: "sequential" decodes
// it whole, then builds (readSnapshot, restore), "parallel" is recovery's
// pipeline (loadParallel). No file, no journal, the collector as set.
func BenchmarkSnapshotLoad(b *testing.B) {
	units := benchUnits(b)
	ctx := context.Background()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ns := newNamespace("", Options{Clock: clock, StallTimeout: time.Minute})
	defineSpec(b, ctx, ns, "s")
	fill(b, ns, ctx, "q", units)
	if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w"}, LeaseTime: time.Hour, MaxJobs: units / 10}); err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, []*capturedNamespace{captureNamespace(ns)}, nil); err != nil {
		b.Fatal(err)
	}
	snap := buf.Bytes()
	ns = nil
	b.Run("sequential", func(b *testing.B) {
		var cpu time.Duration
		defer func() { b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms") }()
		for range b.N {
			c0 := processCPU()
			nss, err := readSnapshot(bytes.NewReader(snap), int64(len(snap)), nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := nss[0].restore(); err != nil {
				b.Fatal(err)
			}
			cpu += processCPU() - c0
			b.StopTimer()
			nss = nil
			runtime.GC()
			b.StartTimer()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		var cpu time.Duration
		defer func() { b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms") }()
		for range b.N {
			c0 := processCPU()
			err := loadParallel(bytes.NewReader(snap), int64(len(snap)), nil, loadBatch, false, func(string, *state, []coordinate.UnitRef) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			cpu += processCPU() - c0
			b.StopTimer()
			runtime.GC()
			b.StartTimer()
		}
	})
}
