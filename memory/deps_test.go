package memory

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// TestDependencyEdgesFollowRetries walks one chain root <- mid <- leaf
// through failure, a retry of the dependent alone, and a retry of the root,
// checking statuses and the reverse-edge bookkeeping at each step.
func TestDependencyEdgesFollowRetries(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace("", Options{Clock: coordinate.NewFakeClock(time.Unix(1e9, 0)), StallTimeout: time.Minute})
	defineSpec(t, ctx, ns, "s")
	ref := func(k string) coordinate.UnitRef { return coordinate.UnitRef{Spec: "s", Key: k} }
	in := func(k string, deps ...string) coordinate.WorkUnitInput {
		u := coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: k, Text: true}, Data: coordinate.EmptyMap}
		for _, d := range deps {
			u.DependsOn = append(u.DependsOn, ref(d))
		}
		return u
	}
	status := func(k string) coordinate.Status { return ns.st.specs["s"].units[k].status }
	expect := func(step string, want map[string]coordinate.Status) {
		t.Helper()
		checkInvariants(t, ns.st)
		for k, st := range want {
			if got := status(k); got != st {
				t.Errorf("%s: %q is %v, want %v", step, k, got, st)
			}
		}
	}
	if err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{in("root"), in("mid", "root"), in("leaf", "mid")}); err != nil {
		t.Fatal(err)
	}
	expect("added", map[string]coordinate.Status{"root": coordinate.StatusAvailable, "mid": coordinate.StatusBlocked, "leaf": coordinate.StatusBlocked})

	// A cycle through existing edges is refused, naming the cycle.
	err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{in("root", "leaf")})
	if !errors.Is(err, coordinate.ErrCycle) || !strings.Contains(err.Error(), "s/root -> s/leaf -> s/mid -> s/root") {
		t.Errorf("cycle: err = %v", err)
	}
	expect("after refused cycle", map[string]coordinate.Status{"root": coordinate.StatusAvailable})

	fail := coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed}
	retry := coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable}
	if err := ns.UpdateWorkUnit(ctx, "s", "root", fail); err != nil {
		t.Fatal(err)
	}
	expect("root failed", map[string]coordinate.Status{"mid": coordinate.StatusFailed, "leaf": coordinate.StatusFailed})
	if tb := string(ns.st.specs["s"].units["leaf"].data); !strings.Contains(tb, "dependency s/root failed") {
		t.Errorf("leaf data %q does not name the root", tb)
	}

	// Retrying the dependent alone: it waits again, the root still failed.
	if err := ns.UpdateWorkUnit(ctx, "s", "mid", retry); err != nil {
		t.Fatal(err)
	}
	expect("mid retried", map[string]coordinate.Status{"mid": coordinate.StatusBlocked, "leaf": coordinate.StatusBlocked})

	if err := ns.UpdateWorkUnit(ctx, "s", "root", retry); err != nil {
		t.Fatal(err)
	}
	expect("root retried", map[string]coordinate.Status{"root": coordinate.StatusAvailable, "mid": coordinate.StatusBlocked, "leaf": coordinate.StatusBlocked})

	finish := coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}
	for _, k := range []string{"root", "mid"} {
		if err := ns.UpdateWorkUnit(ctx, "s", k, finish); err != nil {
			t.Fatal(err)
		}
	}
	expect("chain finished", map[string]coordinate.Status{"leaf": coordinate.StatusAvailable})
	if len(ns.st.dependents) != 0 {
		t.Errorf("resolved edges left behind: %v", ns.st.dependents)
	}
}
