package memory

import (
	"runtime/debug"
	"testing"
)

// TestPauseGCNests: the collector stays off until every pause is resumed,
// resuming twice counts once, and the setting before the first pause
// comes back. (No test of this package runs in parallel with it.)
func TestPauseGCNests(t *testing.T) {
	old := debug.SetGCPercent(123)
	defer debug.SetGCPercent(old)
	r1, r2 := pauseGC(), pauseGC()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("GC percent %d while paused", p)
	}
	r1()
	r1()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("GC percent %d after one of two pauses ended", p)
	}
	r2()
	if p := debug.SetGCPercent(123); p != 123 {
		t.Fatalf("GC percent %d after both pauses ended, want 123", p)
	}
}
