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
