package memory_test

import (
	"testing"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/coordinate/coordinatetest"
	"github.com/coordinated/coordinated/memory"
)

// TestConformance runs the backend-independent conformance suite.
func TestConformance(t *testing.T) {
	coordinatetest.Run(t, func(t *testing.T, c *coordinate.FakeClock) coordinate.Backend {
		return memory.New(memory.Options{Clock: c})
	})
}
