package postgres

import (
	"strconv"
	"testing"

	"coordinated/coordinate"
)

// TestFinishByRememberedID: get_work remembers the row ids of the units it
// leases and the fast path finishes them by id; a remembered id whose row
// is gone (the unit was deleted and added again) only sends the finish
// through the general path, which gives the result it gives without one.
func TestFinishByRememberedID(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.spec(map[string]any{"name": "s"})
	e.add("s", unit("a", map[string]any{}), unit("b", map[string]any{}), unit("c", map[string]any{}))
	e.claim("s", 3)
	if n := e.b.unitIDs.len(); n != 3 {
		t.Fatalf("after leasing 3 units %d ids are remembered, want 3", n)
	}
	e.paths()

	if err := e.ns.UpdateWorkUnit(ctx, "s", "a", finish); err != nil {
		t.Fatalf("finishing a: %v", err)
	}
	if fast, through := e.paths(); fast != 1 || through != 0 {
		t.Errorf("finishing a held unit: fast %d, fell through %d; want 1, 0", fast, through)
	}
	if st := e.status("s", "a"); st != coordinate.StatusFinished {
		t.Errorf("a is %v, want finished", st)
	}
	if n := e.b.unitIDs.len(); n != 2 {
		t.Errorf("after finishing a %d ids are remembered, want 2", n)
	}

	// b's remembered row goes away; the new b is available, as is the
	// never-leased control unit d.
	if _, err := e.ns.DeleteWorkUnits(ctx, "s", coordinate.DeleteQuery{Keys: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	e.add("s", unit("b", map[string]any{"again": true}), unit("d", map[string]any{}))
	errB := e.ns.UpdateWorkUnit(ctx, "s", "b", finish)
	if fast, through := e.paths(); fast != 0 || through != 1 {
		t.Errorf("finishing b by a stale id: fast %d, fell through %d; want 0, 1", fast, through)
	}
	errD := e.ns.UpdateWorkUnit(ctx, "s", "d", finish)
	e.paths()
	if errB != nil || errD != nil {
		t.Errorf("finishing the re-added b: %v; the never-leased d: %v; want both to succeed", errB, errD)
	}
	if stB, stD := e.status("s", "b"), e.status("s", "d"); stB != stD {
		t.Errorf("re-added b is %v, never-leased d is %v: a stale id changed the result", stB, stD)
	}
}

// TestUnitIDsBounded: the remembered ids never exceed maxUnitIDs; reaching
// the bound forgets the old ones.
func TestUnitIDsBounded(t *testing.T) {
	var c unitIDs
	keys := make([]unitKey, maxUnitIDs)
	ids := make([]int64, maxUnitIDs)
	for i := range keys {
		keys[i] = unitKey{1, "s", strconv.Itoa(i)}
		ids[i] = int64(i + 1)
	}
	c.put(keys, ids)
	if c.len() != maxUnitIDs {
		t.Fatalf("len %d after %d puts, want %d", c.len(), maxUnitIDs, maxUnitIDs)
	}
	c.put([]unitKey{{1, "s", "new"}}, []int64{-1})
	if c.len() != 1 {
		t.Errorf("len %d after passing the bound, want 1", c.len())
	}
	got := c.take([]unitKey{{1, "s", "new"}, keys[0]})
	if got[0] != -1 || got[1] != 0 {
		t.Errorf("take = %v, want [-1 0]", got)
	}
	if c.len() != 0 {
		t.Errorf("len %d after take, want 0", c.len())
	}
}
