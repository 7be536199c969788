package coordinatetest

import (
	"sort"

	"github.com/coordinated/coordinated/coordinate"
)

// namespaceTests cover Backend: namespaces are independent queues.
var namespaceTests = []test{
	{"ListedAndIsolated", testNamespacesListedAndIsolated},
}

func testNamespacesListedAndIsolated(e *env) {
	self := e.t.Name() + e.run
	if e.ns.Name() != self {
		e.t.Errorf("Name() = %q, want %q", e.ns.Name(), self)
	}
	nameB, nameA := self+"/b", self+"/a"
	nsB, err := e.b.Namespace(e.ctx, nameB)
	if err != nil {
		e.t.Fatalf("Namespace(%q): %v", nameB, err)
	}
	nsA, err := e.b.Namespace(e.ctx, nameA)
	if err != nil {
		e.t.Fatalf("Namespace(%q): %v", nameA, err)
	}
	if _, err := nsA.SetWorkSpec(e.ctx, enc(e.t, m{"name": "s"})); err != nil {
		e.t.Fatalf("SetWorkSpec in %q: %v", nameA, err)
	}
	if err := nsA.AddWorkUnits(e.ctx, "s", []coordinate.WorkUnitInput{e.unit("k", m{})}); err != nil {
		e.t.Fatalf("AddWorkUnits in %q: %v", nameA, err)
	}
	_, err = nsB.WorkSpec(e.ctx, "s")
	e.wantErr("spec of another namespace", err, coordinate.ErrNoSuchWorkSpec)
	if as, err := nsB.GetWork(e.ctx, coordinate.WorkRequest{Worker: text("w"), LeaseTime: 60e9}); err != nil || len(as) != 0 {
		e.t.Errorf("GetWork in an empty namespace = %q, %v", attemptKeys(as), err)
	}
	// The same name gives the same namespace.
	again, err := e.b.Namespace(e.ctx, nameA)
	if err != nil {
		e.t.Fatalf("Namespace(%q) again: %v", nameA, err)
	}
	if _, err := again.WorkSpec(e.ctx, "s"); err != nil {
		e.t.Errorf("spec not found through a second handle on %q: %v", nameA, err)
	}
	names, err := e.b.Namespaces(e.ctx)
	if err != nil {
		e.t.Fatalf("Namespaces: %v", err)
	}
	if !sort.StringsAreSorted(names) {
		e.t.Errorf("Namespaces not sorted: %q", names)
	}
	for _, want := range []string{self, nameA, nameB} {
		i := sort.SearchStrings(names, want)
		if i == len(names) || names[i] != want {
			e.t.Errorf("Namespaces = %q, missing %q", names, want)
		}
	}
}
