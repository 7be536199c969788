package memory

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// Journal cost inside the backend, without the network. Run with e.g.
//
//	go test -run '^$' -bench 'Journaled|SnapshotPause|Recovery' -benchtime 1x ./memory/
//
// BenchmarkJournaledGetWorkFinish leases and finishes one unit per
// iteration (2 records), volatile vs journaled without fsync (CPU cost of
// encoding and appending) vs group fsync from one goroutine (one fsync per
// record: the worst case; the daemon shares fsyncs between connections).
func BenchmarkJournaledGetWorkFinish(b *testing.B) {
	for _, mode := range []string{"volatile", "none", "group"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			opts := Options{Clock: coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), Logger: quietLogger()}
			if mode != "volatile" {
				opts.DataDir = b.TempDir()
				opts.Sync, _ = journal.ParseSyncPolicy(mode)
			}
			be, err := Open(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			nsi, _ := be.Namespace(ctx, "")
			ns := nsi.(*namespace)
			defineSpec(b, ctx, ns, "s")
			fill(b, ns, ctx, "q", b.N)
			worker := coordinate.Name{Bytes: "worker-1", Text: true}
			done := coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}
			before := be.JournalStats()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, LeaseTime: time.Minute, MaxJobs: 1})
				if err != nil || len(as) != 1 {
					b.Fatalf("get work: %v %v", as, err)
				}
				if err := ns.UpdateWorkUnit(ctx, "s", as[0].Key.Bytes, done); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			st := be.JournalStats()
			if n := st.Records - before.Records; n > 0 {
				b.ReportMetric(float64(st.Bytes-before.Bytes)/float64(n), "B/record")
			}
		})
	}
}

// BenchmarkSnapshotPause measures, at 1M queued units (COORD_BENCH_UNITS
// sets another count), how long a snapshot locks the namespaces at its
// boundary (pause-ms), how long copying and writing it takes after that
// (write-ms), and how long recovery from it takes (recover-ms).
func BenchmarkSnapshotPause(b *testing.B) {
	units := benchUnits(b)
	ctx := context.Background()
	dir := b.TempDir()
	opts := Options{Clock: coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		DataDir: dir, Sync: journal.SyncNone, SnapshotBytes: 1 << 40, Logger: quietLogger()}
	be, err := Open(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	nsi, _ := be.Namespace(ctx, "")
	ns := nsi.(*namespace)
	defineSpec(b, ctx, ns, "s")
	fill(b, ns, ctx, "q", units)
	// Lease a tenth, to a registered worker, so the snapshot holds pending
	// units and the worker's list of them too.
	if err := ns.WorkerHeartbeat(ctx, coordinate.Heartbeat{Worker: coordinate.Name{Bytes: "w"},
		Mode: coordinate.Data{0x43, 0x52, 0x55, 0x4e}, Data: coordinate.EmptyMap, Expire: time.Hour}); err != nil {
		b.Fatal(err)
	}
	if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w"}, LeaseTime: time.Hour, MaxJobs: units / 10}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := be.Close(); err != nil { // close without snapshot is not possible: measure replay separately below
		b.Fatal(err)
	}
	closeTook := time.Since(start)
	b.ResetTimer()
	var st SnapshotStats
	var recover time.Duration
	for range b.N {
		start := time.Now()
		be, err = Open(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		recover = time.Since(start)
		be.wal.maxDeltas = 0 // a full snapshot (nothing changed: a delta would capture nothing)
		if st, err = be.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
		if st.Units != units {
			b.Fatalf("snapshot of %d units, want %d", st.Units, units)
		}
		if err := be.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Pause.Microseconds())/1000, "pause-ms")
	b.ReportMetric(float64(st.Encode.Microseconds())/1000, "write-ms")
	b.ReportMetric(float64(recover.Microseconds())/1000, "recover-ms")
	b.ReportMetric(float64(closeTook.Microseconds())/1000, "first-close-ms")
}

// BenchmarkRecoveryFromJournal measures replaying 1M units' worth of
// journal (adds and a lease) with no snapshot.
func BenchmarkRecoveryFromJournal(b *testing.B) {
	const units = 1_000_000
	ctx := context.Background()
	dir := b.TempDir()
	opts := Options{Clock: coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		DataDir: dir, Sync: journal.SyncNone, SnapshotBytes: 1 << 40, Logger: quietLogger()}
	be, err := Open(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	nsi, _ := be.Namespace(ctx, "")
	ns := nsi.(*namespace)
	defineSpec(b, ctx, ns, "s")
	fill(b, ns, ctx, "q", units)
	for range 1000 {
		if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w"}, LeaseTime: time.Hour, MaxJobs: 100}); err != nil {
			b.Fatal(err)
		}
	}
	crashClose(be)
	b.ResetTimer()
	var took time.Duration
	for range b.N {
		start := time.Now()
		be, err := Open(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		took = time.Since(start)
		crashClose(be)
	}
	b.ReportMetric(float64(took.Microseconds())/1000, "recover-ms")
}

// crashClose closes the journal without the final snapshot.
func crashClose(b *Backend) {
	b.closeOnce.Do(func() {
		close(b.wal.stop)
		<-b.wal.done
		b.wal.j.Close()
	})
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// BenchmarkJournaledDrain8 drains one unit at a time from 8 goroutines, as
// 8 daemon connections would (lease, then finish), without the network:
// the journal's own limit on a drain. "records/group" is the group-commit
// batch size (about half of them finishes, half leases); under group sync
// only the finishes are waited for. "fsyncs/kunit" counts fsyncs per 1000
// units and "cpu-us/unit" the process's CPU time (user + system, so the
// kernel's share of write and fsync included) per unit.
func BenchmarkJournaledDrain8(b *testing.B) {
	const workers = 8
	for _, mode := range []string{"volatile", "none", "interval=5ms", "group"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			opts := Options{Clock: coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), Logger: quietLogger()}
			if mode != "volatile" {
				opts.DataDir = b.TempDir()
				opts.Sync, opts.SyncInterval, _ = journal.ParseSync(mode)
			}
			be, err := Open(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			nsi, _ := be.Namespace(ctx, "")
			ns := nsi.(*namespace)
			defineSpec(b, ctx, ns, "s")
			fill(b, ns, ctx, "q", b.N)
			done := coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}
			before := be.JournalStats()
			cpu := processCPU()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range workers {
				worker := coordinate.Name{Bytes: fmt.Sprintf("worker-%d", w), Text: true}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, LeaseTime: time.Minute, MaxJobs: 1})
						if err != nil {
							b.Error(err)
							return
						}
						if len(as) == 0 {
							return // drained
						}
						if err := ns.UpdateWorkUnit(ctx, "s", as[0].Key.Bytes, done); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			cpu = processCPU() - cpu
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "units/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/unit")
			st := be.JournalStats()
			if st.Flushes > before.Flushes {
				b.ReportMetric(float64(st.Records-before.Records)/float64(st.Flushes-before.Flushes), "records/group")
			}
			b.ReportMetric(float64(st.Syncs-before.Syncs)*1000/float64(b.N), "fsyncs/kunit")
		})
	}
}
