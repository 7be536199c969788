package postgres

import (
	"context"
	"testing"

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
