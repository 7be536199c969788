package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// BenchmarkSnapshotClientLatency measures what clients see while a
// snapshot of a big queue is taken: two goroutines lease and finish units
// one at a time while each iteration takes one snapshot. Under "none" no
// finish waits for an fsync, so the backend's own pauses show; "group" is
// the daemon's default, where a finish also waits for its sync behind the
// snapshot's writes to the same disk. "full" rewrites every unit (the
// snapshot a restart after many changes needs, and the one whose pause
// grew with the queue); "delta" follows a change of 1% of the units,
// leased and finished before the iteration's timer starts. It reports the
// longest call and the 99.9th percentile during snapshots (client-max-ms,
// client-p999-ms), the longest get_work (getwork-max-ms: it never waits
// for the disk, so it shows the backend's own pauses, where a finish also
// waits for its journal write behind the snapshot file's writeback), the
// calls served during them, how long a snapshot took, and the longest
// time it held a namespace's lock. The queue holds 1,000,000 units;
// COORD_BENCH_UNITS sets another size.
//
//	go test -run '^$' -bench SnapshotClientLatency -benchtime 3x ./memory/
func BenchmarkSnapshotClientLatency(b *testing.B) {
	for _, policy := range []journal.SyncPolicy{journal.SyncNone, journal.SyncGroup} {
		for _, kind := range []string{"full", "delta"} {
			b.Run(kind+"/"+policy.String(), func(b *testing.B) { benchSnapshotClientLatency(b, kind == "full", policy) })
		}
	}
}

func benchSnapshotClientLatency(b *testing.B, full bool, policy journal.SyncPolicy) {
	units := benchUnits(b)
	ctx := context.Background()
	opts := Options{Clock: coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		DataDir: b.TempDir(), Sync: policy, SnapshotBytes: 1 << 40, Logger: quietLogger()}
	be, err := Open(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	nsi, _ := be.Namespace(ctx, "")
	ns := nsi.(*namespace)
	if _, err := ns.SetWorkSpec(ctx, coordinate.Data{0xa1, 0x64, 'n', 'a', 'm', 'e', 0x61, 's'}); err != nil {
		b.Fatal(err)
	}
	fill(b, ns, ctx, "q", units)
	if _, err := be.Snapshot(ctx); err != nil { // the first one compacts the fill
		b.Fatal(err)
	}
	done := coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}
	finishOne := func(worker coordinate.Name) (time.Duration, time.Duration, error) {
		t0 := time.Now()
		as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, LeaseTime: time.Hour, MaxJobs: 1})
		t1 := time.Now()
		if err != nil || len(as) != 1 {
			return 0, 0, fmt.Errorf("get work: %v %v", as, err)
		}
		if err := ns.UpdateWorkUnit(ctx, "s", as[0].Key.Bytes, done); err != nil {
			return 0, 0, err
		}
		return t1.Sub(t0), time.Since(t1), nil
	}
	var lat, leases []time.Duration
	var snapTook, longestHold time.Duration
	deltas := 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if full {
			be.wal.needBase = true
		} else {
			for range units / 100 {
				if _, _, err := finishOne(coordinate.Name{Bytes: "changer", Text: true}); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StartTimer()
		stop := make(chan struct{})
		var mu sync.Mutex
		var wg sync.WaitGroup
		for c := range 2 {
			worker := coordinate.Name{Bytes: fmt.Sprintf("worker-%d", c), Text: true}
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine, mineLeases []time.Duration
				defer func() {
					mu.Lock()
					lat = append(lat, mine...)
					leases = append(leases, mineLeases...)
					mu.Unlock()
				}()
				for {
					select {
					case <-stop:
						return
					default:
					}
					lease, finish, err := finishOne(worker)
					if err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, lease, finish)
					mineLeases = append(mineLeases, lease)
				}
			}()
		}
		start := time.Now()
		st, err := be.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		snapTook += time.Since(start)
		longestHold = max(longestHold, st.Pause, st.LongestHold)
		if st.Delta {
			deltas++
		}
		close(stop)
		wg.Wait()
	}
	b.StopTimer()
	if want := map[bool]int{true: 0, false: b.N}[full]; deltas != want {
		b.Fatalf("%d of %d snapshots were deltas, want %d", deltas, b.N, want)
	}
	if len(lat) == 0 {
		b.Fatal("no client call completed during the snapshots")
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)-1]), "client-max-ms")
	b.ReportMetric(ms(slices.Max(leases)), "getwork-max-ms")
	b.ReportMetric(ms(lat[len(lat)*999/1000]), "client-p999-ms")
	b.ReportMetric(float64(len(lat))/float64(b.N), "calls/snapshot")
	b.ReportMetric(ms(snapTook)/float64(b.N), "snapshot-ms")
	b.ReportMetric(ms(longestHold), "lock-hold-max-ms")
}

// benchUnits is the queue size of the big-queue benchmarks: 1,000,000, or
// COORD_BENCH_UNITS.
func benchUnits(b *testing.B) int {
	s := os.Getenv("COORD_BENCH_UNITS")
	if s == "" {
		return 1_000_000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("COORD_BENCH_UNITS=%q: want a positive count", s)
	}
	return n
}

// BenchmarkSnapshotFullShuffled times a full snapshot of
// COORD_BENCH_UNITS units (default 1M) added in random key order, so that
// their memory order is not their heaps' order, a tenth of them finished
// (in no heap: the capture's map walk runs after its heap walk, cow.go)
// and a tenth leased. cpu-ms is the process CPU per snapshot.
func BenchmarkSnapshotFullShuffled(b *testing.B) {
	units := benchUnits(b)
	ctx := context.Background()
	be, err := Open(ctx, Options{Clock: coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		DataDir: b.TempDir(), Sync: journal.SyncNone, SnapshotBytes: 1 << 40, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer crashClose(be)
	nsi, _ := be.Namespace(ctx, "")
	ns := nsi.(*namespace)
	defineSpec(b, ctx, ns, "s")
	perm := rand.New(rand.NewPCG(1, 2)).Perm(units)
	batch := make([]coordinate.WorkUnitInput, 0, 10000)
	for k, i := range perm {
		batch = append(batch, coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("q%09d", i), Text: true}, Data: smallData})
		if len(batch) == cap(batch) || k == len(perm)-1 {
			if err := ns.AddWorkUnits(ctx, "s", batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	w := coordinate.Name{Bytes: "w"}
	done := coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}
	as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: w, LeaseTime: time.Hour, MaxJobs: units / 10})
	if err != nil {
		b.Fatal(err)
	}
	for _, a := range as {
		if err := ns.UpdateWorkUnit(ctx, "s", a.Key.Bytes, done); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: w, LeaseTime: time.Hour, MaxJobs: units / 10}); err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		be.wal.needBase = true
		c0 := processCPU()
		if _, err := be.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - c0
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms")
}
