package coordinatetest

import (
	"fmt"
	"maps"
	"slices"

	"github.com/coordinated/coordinated/coordinate"
)

// cascade is the dependency graph testDepWideDeepCascade builds: a root
// with many direct dependents, some of them with dependents three levels
// further down (two of those levels in a second spec), a unit reached
// through two paths of different lengths, one reached through two of the
// same length, and units that also wait for a second root.
type cascade struct {
	wide int // direct dependents of root
	deep int // of them, how many have a chain of three more levels below
}

func (c cascade) key(level string, i int) string { return fmt.Sprintf("%s%04d", level, i) }

// fromRoot lists the units a failure of s/root reaches and no other
// failed unit does, by spec.
func (c cascade) fromRoot() map[string][]string {
	out := map[string][]string{"s": {"diamond", "twice"}}
	for i := range c.wide {
		out["s"] = append(out["s"], c.key("d", i))
	}
	for i := range c.deep {
		out["s"] = append(out["s"], c.key("e", i))
		out["t"] = append(out["t"], c.key("f", i), c.key("g", i))
	}
	return out
}

// fromRoot2 lists the units that also wait, directly or not, for s/root2.
var fromRoot2 = map[string][]string{"s": {"both", "deep2"}, "t": {"deep3"}}

func (c cascade) add(e *env) {
	e.spec(m{"name": "s"})
	e.spec(m{"name": "t"})
	on := func(key string, deps ...coordinate.UnitRef) coordinate.WorkUnitInput {
		in := e.unit(key, m{"k": key})
		in.DependsOn = deps
		return in
	}
	ref := func(spec, key string) coordinate.UnitRef { return coordinate.UnitRef{Spec: spec, Key: key} }
	s := []coordinate.WorkUnitInput{on("root"), on("root2"),
		on("both", ref("s", "root"), ref("s", "root2")),
		on("diamond", ref("s", c.key("d", 1)), ref("s", c.key("e", 2))),
		on("twice", ref("s", c.key("d", 5)), ref("s", c.key("d", 6))),
		on("deep2", ref("s", c.key("e", 3)), ref("s", "root2"))}
	var t []coordinate.WorkUnitInput
	for i := range c.wide {
		s = append(s, on(c.key("d", i), ref("s", "root")))
	}
	for i := range c.deep {
		s = append(s, on(c.key("e", i), ref("s", c.key("d", i))))
		t = append(t, on(c.key("f", i), ref("s", c.key("e", i))),
			on(c.key("g", i), ref("t", c.key("f", i))))
	}
	t = append(t, on("deep3", ref("s", "deep2")))
	e.add("s", s...)
	e.add("t", t...)
}

// checkUnits fails the test unless every unit of keys (by spec) has
// status want and, when tb is not empty, a traceback tb.
func (e *env) checkUnits(keys map[string][]string, want coordinate.Status, tb ...string) {
	e.t.Helper()
	for spec, ks := range keys {
		us, err := e.ns.GetWorkUnits(e.ctx, spec, ks)
		if err != nil {
			e.t.Fatalf("GetWorkUnits(%q, %d keys): %v", spec, len(ks), err)
		}
		bad := 0
		for i, u := range us {
			switch {
			case u == nil:
				e.t.Errorf("unit %q/%q does not exist", spec, ks[i])
			case u.Status != want:
				e.t.Errorf("unit %q/%q status = %v, want %v", spec, ks[i], u.Status, want)
			case len(tb) > 0 && !slices.Contains(tb, dataField(e.t, u.Data, "traceback")):
				e.t.Errorf("unit %q/%q traceback = %q, want one of %q", spec, ks[i], dataField(e.t, u.Data, "traceback"), tb)
			default:
				continue
			}
			if bad++; bad == 5 {
				e.t.Fatalf("and maybe more of spec %q", spec)
			}
		}
	}
}

// checkRecount fails the test unless CountWorkUnits of spec equals both
// want and a count of the units ListWorkUnits lists.
func (e *env) checkRecount(spec string, want map[coordinate.Status]int) {
	e.t.Helper()
	us, err := e.ns.ListWorkUnits(e.ctx, spec, coordinate.WorkUnitQuery{})
	if err != nil {
		e.t.Fatalf("ListWorkUnits(%q): %v", spec, err)
	}
	recount := map[coordinate.Status]int{}
	for _, u := range us {
		recount[u.Status]++
	}
	if got := e.counts(spec); !maps.Equal(got, recount) {
		e.t.Errorf("CountWorkUnits(%q) = %v, but its units listed count %v", spec, got, recount)
	}
	e.checkCounts(spec, want)
}

// A failure with thousands of dependents, some several levels down and
// in another spec, fails each of them once, naming the root (a unit
// reached from two failed roots names either), and the counts stay
// exact; retrying the root blocks them all again, except those still
// waiting for another failed unit, until that one is retried too.
func testDepWideDeepCascade(e *env) {
	c := cascade{wide: 2000, deep: 100}
	c.add(e)
	root, root2 := coordinate.UnitRef{Spec: "s", Key: "root"}, coordinate.UnitRef{Spec: "s", Key: "root2"}
	byRoot := coordinate.DependencyFailedTraceback(root)
	byRoot2 := coordinate.DependencyFailedTraceback(root2)
	blocked := c.wide + c.deep + 4 // in s: d, e, both, diamond, twice, deep2
	initial := func() {
		e.t.Helper()
		e.checkRecount("s", map[coordinate.Status]int{coordinate.StatusAvailable: 2, coordinate.StatusBlocked: blocked})
		e.checkRecount("t", map[coordinate.Status]int{coordinate.StatusBlocked: 2*c.deep + 1})
	}
	initial()

	e.fail("s", "root2")
	e.checkUnits(fromRoot2, coordinate.StatusFailed, byRoot2)
	e.checkUnits(c.fromRoot(), coordinate.StatusBlocked)
	e.fail("s", "root")
	e.checkUnits(c.fromRoot(), coordinate.StatusFailed, byRoot)
	e.checkUnits(map[string][]string{"s": {"both"}}, coordinate.StatusFailed, byRoot, byRoot2)
	e.checkUnits(map[string][]string{"s": {"deep2"}, "t": {"deep3"}}, coordinate.StatusFailed, byRoot2)
	e.checkRecount("s", map[coordinate.Status]int{coordinate.StatusFailed: 2 + blocked})
	e.checkRecount("t", map[coordinate.Status]int{coordinate.StatusFailed: 2*c.deep + 1})

	e.update("s", "root", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	e.checkUnits(c.fromRoot(), coordinate.StatusBlocked)
	e.checkUnits(fromRoot2, coordinate.StatusFailed)
	e.checkDeps("diamond", c.key("d", 1), c.key("e", 2))
	e.checkDeps("twice", c.key("d", 5), c.key("d", 6))
	e.checkDeps(c.key("e", 0), c.key("d", 0))
	e.checkRecount("s", map[coordinate.Status]int{coordinate.StatusAvailable: 1,
		coordinate.StatusFailed: 3, coordinate.StatusBlocked: blocked - 2})
	e.checkRecount("t", map[coordinate.Status]int{coordinate.StatusFailed: 1, coordinate.StatusBlocked: 2 * c.deep})

	e.update("s", "root2", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	e.checkUnits(fromRoot2, coordinate.StatusBlocked)
	e.checkDeps("both", "root", "root2")
	initial()
}

// Archiving failed units of two specs at once fails their waiters in
// both, and the waiters' own dependents, here in a third spec.
func testDepArchivedAcrossSpecs(e *env) {
	for _, s := range []string{"s", "t", "u"} {
		e.spec(m{"name": s})
	}
	on := func(key, spec, dep string) coordinate.WorkUnitInput {
		in := e.unit(key, m{})
		in.DependsOn = []coordinate.UnitRef{{Spec: spec, Key: dep}}
		return in
	}
	e.add("s", e.unit("root", m{}), on("waits", "s", "root"))
	e.add("t", e.unit("root", m{}), on("waits", "t", "root"))
	e.add("u", on("s", "s", "waits"), on("t", "t", "waits"), e.unit("free", m{}))
	e.fail("s", "root")
	e.fail("t", "root")
	e.checkStatus("u", coordinate.StatusFailed, "s", "t")
	// Retried while their dependency is FAILED, the waiters wait for it
	// again, and so do their own dependents.
	for _, s := range []string{"s", "t"} {
		e.update(s, "waits", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
		e.checkStatus(s, coordinate.StatusBlocked, "waits")
	}
	e.checkStatus("u", coordinate.StatusBlocked, "s", "t")
	if err := e.ns.Archive(e.ctx, []string{"s", "t"}, coordinate.RetentionPolicy{MaxCount: 0}); err != nil {
		e.t.Fatal(err)
	}
	e.checkStatus("s", coordinate.StatusFailed, "waits")
	e.checkStatus("t", coordinate.StatusFailed, "waits")
	e.checkUnits(map[string][]string{"u": {"s", "t"}}, coordinate.StatusFailed,
		coordinate.DependencyFailedTraceback(coordinate.UnitRef{Spec: "s", Key: "root"}),
		coordinate.DependencyFailedTraceback(coordinate.UnitRef{Spec: "t", Key: "root"}))
	e.checkStatus("u", coordinate.StatusAvailable, "free")
	e.checkRecount("u", map[coordinate.Status]int{coordinate.StatusFailed: 2, coordinate.StatusAvailable: 1})
}
