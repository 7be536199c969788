package memory

import (
	"context"
	"testing"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/coordinate/coordinatetest"
)

// Dependency release at a size users run: 100,000 units.
//
//	go test -run '^$' -bench 'FanOut|Chain' -benchtime 1x ./memory/
func BenchmarkFanOut(b *testing.B) {
	coordinatetest.BenchmarkFanOut(b, depsBenchNamespace(b), 100_000)
}

func BenchmarkAddDAG(b *testing.B) {
	coordinatetest.BenchmarkAddDAG(b, depsBenchNamespace(b), 10_000)
}

func BenchmarkChain(b *testing.B) {
	coordinatetest.BenchmarkChain(b, depsBenchNamespace(b), 100_000)
}

func depsBenchNamespace(b *testing.B) coordinate.Namespace {
	ns, err := New(Options{}).Namespace(context.Background(), "")
	if err != nil {
		b.Fatal(err)
	}
	return ns
}
