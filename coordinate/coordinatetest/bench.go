package coordinatetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// Benchmarks shared by every backend. Each backend's bench file opens a
// namespace and calls these; they report units/s of dependency release.

// BenchmarkFanOut adds one root unit and n units that depend on it, then
// times finishing the root, which must release all n at once. It reports
// released units/s.
func BenchmarkFanOut(b *testing.B, ns coordinate.Namespace, n int) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		spec := fmt.Sprintf("fanout-%d", i)
		benchSpec(b, ns, spec)
		root := coordinate.UnitRef{Spec: spec, Key: "root"}
		benchAdd(b, ns, spec, []coordinate.WorkUnitInput{{Key: bin("root"), Data: coordinate.EmptyMap}})
		units := make([]coordinate.WorkUnitInput, n)
		for j := range units {
			units[j] = coordinate.WorkUnitInput{Key: bin(fmt.Sprintf("leaf%07d", j)), Data: coordinate.EmptyMap, DependsOn: []coordinate.UnitRef{root}}
		}
		benchAdd(b, ns, spec, units)
		b.StartTimer()
		if err := ns.UpdateWorkUnit(ctx, spec, "root", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		counts, err := ns.CountWorkUnits(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		if counts[coordinate.StatusAvailable] != n || counts[coordinate.StatusBlocked] != 0 {
			b.Fatalf("after finishing the root: counts %v, want %d available", counts, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "released-units/s")
}

// BenchmarkChain adds a chain of n units, each depending on the one before,
// then times working through it: get_work (which can only ever find the
// one released unit) and finish, n times. It reports units/s.
func BenchmarkChain(b *testing.B, ns coordinate.Namespace, n int) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		spec := fmt.Sprintf("chain-%d", i)
		benchSpec(b, ns, spec)
		units := chainOf(spec, n)
		benchAdd(b, ns, spec, units)
		req := coordinate.WorkRequest{Worker: bin("bench"), LeaseTime: time.Hour, MaxJobs: 1, WorkSpecs: []string{spec}}
		b.StartTimer()
		for j := 0; j < n; j++ {
			as, err := ns.GetWork(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if len(as) != 1 || as[0].Key.Bytes != units[j].Key.Bytes {
				b.Fatalf("step %d: GetWork = %q, want %q", j, attemptKeys(as), units[j].Key.Bytes)
			}
			if err := ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: spec, Key: as[0].Key.Bytes, ID: as[0].ID},
				coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "units/s")
}

func benchSpec(b *testing.B, ns coordinate.Namespace, name string) {
	if _, err := ns.SetWorkSpec(context.Background(), enc(b, m{"name": name})); err != nil {
		b.Fatal(err)
	}
}

// benchAdd adds units in batches of 10,000, as a client loading a file
// would.
func benchAdd(b *testing.B, ns coordinate.Namespace, spec string, units []coordinate.WorkUnitInput) {
	for len(units) > 0 {
		n := min(len(units), 10000)
		if err := ns.AddWorkUnits(context.Background(), spec, units[:n]); err != nil {
			b.Fatal(err)
		}
		units = units[n:]
	}
}

// BenchmarkAddDAG times submitting a chain of n units, each depending on
// the one before, in one add_work_units call, and then submitting it
// again (every unit re-added, BLOCKED on its re-added predecessor but the
// first). It reports units/s over both calls.
func BenchmarkAddDAG(b *testing.B, ns coordinate.Namespace, n int) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		spec := fmt.Sprintf("dag-%d", i)
		benchSpec(b, ns, spec)
		units := chainOf(spec, n)
		b.StartTimer()
		for range 2 {
			if err := ns.AddWorkUnits(ctx, spec, units); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		counts, err := ns.CountWorkUnits(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		if counts[coordinate.StatusAvailable] != 1 || counts[coordinate.StatusBlocked] != n-1 {
			b.Fatalf("after submitting the chain twice: counts %v, want 1 available and %d blocked", counts, n-1)
		}
	}
	b.ReportMetric(float64(2*n*b.N)/b.Elapsed().Seconds(), "units/s")
}

// chainOf is n units of spec, step0000000 to step<n-1>, each depending on
// the one before.
func chainOf(spec string, n int) []coordinate.WorkUnitInput {
	units := make([]coordinate.WorkUnitInput, n)
	for j := range units {
		units[j] = coordinate.WorkUnitInput{Key: bin(fmt.Sprintf("step%07d", j)), Data: coordinate.EmptyMap}
		if j > 0 {
			units[j].DependsOn = []coordinate.UnitRef{{Spec: spec, Key: fmt.Sprintf("step%07d", j-1)}}
		}
	}
	return units
}
