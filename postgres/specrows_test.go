package postgres

import (
	"testing"

	"github.com/coordinated/coordinated/coordinate"
)

// decodedSpecRows returns how many spec rows the scheduler's reads
// decoded since the last call.
func (e *fastEnv) decodedSpecRows() int64 {
	return e.ns.(*watchedNamespace).ns.specRows.decoded.Swap(0)
}

// TestSpecRowsFollowChanges: the scheduler's reads decode a spec row
// once per version (specrows.go), and every change of a spec's settings
// (control_work_spec, set_work_spec) is what the next read chooses by.
func TestSpecRowsFollowChanges(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.spec(map[string]any{"name": "a", "weight": 1})
	e.spec(map[string]any{"name": "b", "weight": 10})
	e.add("a", numbered(10)...)
	e.add("b", numbered(10)...)
	step := func(what, want string, decoded int64) {
		t.Helper()
		if got := specsOf(e.getWork(nil, 1)); got != want {
			t.Fatalf("%s: get_work gave %s, want %s", what, got, want)
		}
		if n := e.decodedSpecRows(); n != decoded {
			t.Errorf("%s: the read decoded %d spec rows, want %d", what, n, decoded)
		}
	}
	// Two specs with units: every get_work reads (no guess).
	step("first read", "b/u00000", 2)
	step("same rows", "b/u00001", 0)
	yes, no := true, false
	if err := e.ns.ControlWorkSpec(ctx, "b", coordinate.WorkSpecControl{Paused: &yes}); err != nil {
		t.Fatal(err)
	}
	// b is not read at all while paused; a is the only spec: the next
	// get_work reads, the one after it guesses a.
	step("b paused", "a/u00000", 0)
	if err := e.ns.ControlWorkSpec(ctx, "b", coordinate.WorkSpecControl{Paused: &no}); err != nil {
		t.Fatal(err)
	}
	// The guess of a fails (b has units again) and the read sees b's new
	// version.
	step("b resumed", "b/u00002", 1)
	weight := 100
	if err := e.ns.ControlWorkSpec(ctx, "a", coordinate.WorkSpecControl{Weight: &weight}); err != nil {
		t.Fatal(err)
	}
	step("a weighs more", "a/u00001", 1)
	e.spec(map[string]any{"name": "b", "weight": 10, "priority": 1})
	step("b's priority set", "b/u00003", 1)
	step("nothing changed", "b/u00004", 0)
}
