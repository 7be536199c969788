package postgres

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/coordinate/coordinatetest"
)

// Dependency release at a size users run: 100,000 units. Needs
// COORDINATE_TEST_POSTGRES like the tests.
//
//	go test -run '^$' -bench 'FanOut|Chain|AddDAG' -benchtime 1x ./postgres/
func BenchmarkFanOut(b *testing.B) {
	coordinatetest.BenchmarkFanOut(b, depsBenchNamespace(b), 100_000)
}

// BenchmarkChain takes two transactions per unit (get_work, finish) from
// one client, so it measures round trips more than release.
func BenchmarkChain(b *testing.B) {
	coordinatetest.BenchmarkChain(b, depsBenchNamespace(b), 100_000)
}

// BenchmarkAddDAG submits a chain of 10,000 units twice.
func BenchmarkAddDAG(b *testing.B) {
	coordinatetest.BenchmarkAddDAG(b, depsBenchNamespace(b), 10_000)
}

func depsBenchNamespace(b *testing.B) coordinate.Namespace {
	b.Helper()
	ctx := context.Background()
	be, err := New(ctx, freshSchema(b), Options{})
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	b.Cleanup(func() { be.Close() })
	ns, err := be.Namespace(ctx, "deps-bench")
	if err != nil {
		b.Fatal(err)
	}
	return ns
}

// BenchmarkFailCascade fails a unit with 2,000 direct dependents, 200 of
// them with two more levels below (addCascade), and retries it, which
// blocks them all again: one op is both updates, each also reported on
// its own.
//
//	go test -run '^$' -bench FailCascade -benchtime 20x ./postgres/
func BenchmarkFailCascade(b *testing.B) {
	ns := depsBenchNamespace(b)
	ctx := context.Background()
	n := addCascade(b, ns)
	var failing, retrying time.Duration
	for b.Loop() {
		start := time.Now()
		if err := ns.UpdateWorkUnit(ctx, "s", "root", statusUpdate(coordinate.StatusFailed)); err != nil {
			b.Fatal(err)
		}
		failed := time.Now()
		if err := ns.UpdateWorkUnit(ctx, "s", "root", statusUpdate(coordinate.StatusAvailable)); err != nil {
			b.Fatal(err)
		}
		failing += failed.Sub(start)
		retrying += time.Since(failed)
	}
	counts, err := ns.CountWorkUnits(ctx, "s")
	if err != nil {
		b.Fatal(err)
	}
	if want := map[coordinate.Status]int{coordinate.StatusAvailable: 1, coordinate.StatusBlocked: n}; !maps.Equal(counts, want) {
		b.Fatalf("counts after the last retry = %v, want %v", counts, want)
	}
	b.ReportMetric(float64(failing.Microseconds())/1000/float64(b.N), "fail-ms/op")
	b.ReportMetric(float64(retrying.Microseconds())/1000/float64(b.N), "retry-ms/op")
}

// addCascade defines spec "s" and adds s/root with 2,000 direct
// dependents a0000..a1999, of which the first 200 have a dependent
// b_i, itself with a dependent c_i: 2,400 dependents in three levels. It
// returns the number of dependents.
func addCascade(tb testing.TB, ns coordinate.Namespace) int {
	tb.Helper()
	ctx := context.Background()
	raw, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns.SetWorkSpec(ctx, raw); err != nil {
		tb.Fatal(err)
	}
	units := []coordinate.WorkUnitInput{{Key: textName("root"), Data: coordinate.Null}}
	on := func(key, dep string) coordinate.WorkUnitInput {
		return coordinate.WorkUnitInput{Key: textName(key), Data: coordinate.Null,
			DependsOn: []coordinate.UnitRef{{Spec: "s", Key: dep}}}
	}
	for i := range 2000 {
		units = append(units, on(fmt.Sprintf("a%04d", i), "root"))
		if i < 200 {
			units = append(units, on(fmt.Sprintf("b%04d", i), fmt.Sprintf("a%04d", i)),
				on(fmt.Sprintf("c%04d", i), fmt.Sprintf("b%04d", i)))
		}
	}
	if err := ns.AddWorkUnits(ctx, "s", units); err != nil {
		tb.Fatal(err)
	}
	return len(units) - 1
}
