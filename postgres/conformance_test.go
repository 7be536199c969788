package postgres

import (
	"testing"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/coordinate/coordinatetest"
)

// TestConformance runs the shared backend suite against PostgreSQL, each
// test in a fresh schema of the COORDINATE_TEST_POSTGRES database.
func TestConformance(t *testing.T) {
	testURL(t)
	coordinatetest.Run(t, func(t *testing.T, c *coordinate.FakeClock) coordinate.Backend {
		b, err := New(t.Context(), freshSchema(t), Options{Clock: c, MaxConns: 4})
		if err != nil {
			t.Fatalf("postgres.New: %v", err)
		}
		return b
	})
}

// TestConformanceSharedReads runs the topics get_work's path touches with
// every get_work reading in a transaction of its own, as it does while
// many requests wait for the committer (getwork.go's sharedRound); the
// suite above, one call at a time, takes the committer's path.
func TestConformanceSharedReads(t *testing.T) {
	testURL(t)
	coordinatetest.RunGroups(t, func(t *testing.T, c *coordinate.FakeClock) coordinate.Backend {
		b, err := New(t.Context(), freshSchema(t), Options{Clock: c, MaxConns: 4})
		if err != nil {
			t.Fatalf("postgres.New: %v", err)
		}
		b.commits.foldBelow = 0
		return b
	}, "GetWork", "Scheduler", "Leases", "Continuous", "Concurrency", "Workers")
}
