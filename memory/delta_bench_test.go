package memory

import (
	"context"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// deltaBenchBackend opens a journaled backend in a temporary directory
// holding COORD_BENCH_UNITS units (default 1M, a tenth leased) in spec "s"
// and a full snapshot of them.
func deltaBenchBackend(b *testing.B, dir string) (*Backend, *namespace, int) {
	units := benchUnits(b)
	ctx := context.Background()
	be, err := Open(ctx, Options{Clock: coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		DataDir: dir, Sync: journal.SyncNone, SnapshotBytes: 1 << 40, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	be.wal.maxDeltas, be.wal.deltaShare = 1<<30, 1
	nsi, _ := be.Namespace(ctx, "")
	ns := nsi.(*namespace)
	if _, err := ns.SetWorkSpec(ctx, coordinate.Data{0xa1, 0x64, 'n', 'a', 'm', 'e', 0x61, 's'}); err != nil {
		b.Fatal(err)
	}
	fill(b, ns, ctx, "q", units)
	if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w"}, LeaseTime: time.Hour, MaxJobs: units / 10}); err != nil {
		b.Fatal(err)
	}
	if st, err := be.Snapshot(ctx); err != nil || st.Delta {
		b.Fatalf("first snapshot: %+v, %v", st, err)
	}
	return be, ns, units
}

// changeOnePercent leases and finishes 1% of the units, one call per 100.
func changeOnePercent(b *testing.B, ns *namespace, units int) {
	changeUnits(b, ns, units/100)
}

// changeUnits leases and finishes n units, one call per 100.
func changeUnits(b *testing.B, ns *namespace, n int) {
	ctx := context.Background()
	done := coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}
	for left := n; left > 0; left -= 100 {
		as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w"}, LeaseTime: time.Hour, MaxJobs: min(left, 100)})
		if err != nil {
			b.Fatal(err)
		}
		for _, a := range as {
			if err := ns.UpdateWorkUnit(ctx, "s", a.Key.Bytes, done); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSnapshotDelta times a snapshot taken after 1% of
// COORD_BENCH_UNITS units (default 1M) changed (leased and finished):
// "full" rewrites every unit, "delta" only those changed. Metrics:
// snap-bytes (the file's payload), units (written), cpu-ms (process CPU
// per snapshot: wall time on a loaded machine says little), ns/op.
func BenchmarkSnapshotDelta(b *testing.B) {
	for _, kind := range []string{"full", "delta"} {
		b.Run(kind, func(b *testing.B) {
			be, ns, units := deltaBenchBackend(b, b.TempDir())
			defer crashClose(be)
			var st SnapshotStats
			var cpu time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				changeOnePercent(b, ns, units)
				be.wal.needBase = kind == "full"
				b.StartTimer()
				var err error
				c0 := processCPU()
				if st, err = be.Snapshot(context.Background()); err != nil {
					b.Fatal(err)
				}
				cpu += processCPU() - c0
				if st.Delta != (kind == "delta") {
					b.Fatalf("snapshot %+v, want %s", st, kind)
				}
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms")
			b.ReportMetric(float64(st.Bytes), "snap-bytes")
			b.ReportMetric(float64(st.Units), "units")
		})
	}
}

// BenchmarkRestartDeltas times Open on a directory holding a full
// snapshot of COORD_BENCH_UNITS units (default 1M) followed by 8 deltas,
// each after 1% of the units changed ("base+8deltas"), against the same
// state in one full snapshot ("full"); no journal after them.
// "limit+tail" is the worst case the policy allows: defaultMaxDeltas
// deltas holding together 1/defaultDeltaShare of the units, then
// COORD_BENCH_TAIL bytes of journal (default 64 MiB, as
// BenchmarkRestart). cpu-ms is the process CPU per Open.
func BenchmarkRestartDeltas(b *testing.B) {
	for _, kind := range []string{"full", "base+8deltas", "limit+tail"} {
		b.Run(kind, func(b *testing.B) {
			dir := b.TempDir()
			be, ns, units := deltaBenchBackend(b, dir)
			deltas, change := 8, units/100
			if kind == "limit+tail" {
				deltas, change = defaultMaxDeltas, units/(defaultDeltaShare*defaultMaxDeltas)
			}
			for i := range deltas {
				changeUnits(b, ns, change)
				be.wal.needBase = kind == "full" && i == deltas-1
				if _, err := be.Snapshot(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			if kind == "limit+tail" {
				writeTail(b, be, ns, benchTail(b))
			}
			crashClose(be)
			opts := Options{Clock: coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
				DataDir: dir, Sync: journal.SyncNone, SnapshotBytes: 1 << 40}
			phases := &phaseLog{took: map[string]time.Duration{}}
			opts.Logger = slog.New(phases)
			var cpu time.Duration
			runtime.GC() // the building backend's garbage, as BenchmarkRestart
			b.ResetTimer()
			for range b.N {
				c0 := processCPU()
				r, err := Open(context.Background(), opts)
				if err != nil {
					b.Fatal(err)
				}
				cpu += processCPU() - c0
				if n := len(r.wal.j.Report().Deltas); n != map[string]int{"full": 0, "base+8deltas": 8, "limit+tail": defaultMaxDeltas}[kind] {
					b.Fatalf("%d deltas loaded", n)
				}
				b.StopTimer()
				crashClose(r)
				runtime.GC()
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms")
			for _, k := range []string{"load_snapshot", "load_full", "load_deltas", "settle_heaps", "replay_journal"} {
				b.ReportMetric(float64(phases.took["memory_backend_recovered."+k].Microseconds())/1000, k+"-ms")
			}
		})
	}
}
