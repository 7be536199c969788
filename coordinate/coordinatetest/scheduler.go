package coordinatetest

import (
	"strings"

	"github.com/coordinated/coordinated/coordinate"
)

// schedulerTests cover the choice between work specs (DECISIONS §1-2,
// SEMANTICS §8.4), observed through GetWork.
var schedulerTests = []test{
	{"SpecPriorityWins", testSchedSpecPriority},
	{"UnitPriorityAcrossSpecs", testSchedUnitPriority},
	{"Weight300Beats1", testSchedWeight300},
	{"Weights6And4", testSchedWeights6And4},
	{"TieByName", testSchedTieByName},
	{"ThenPreempts", testSchedThenPreempts},
	{"ThenPreemptsChain", testSchedThenPreemptsChain},
	{"ThenPreemptsFalse", testSchedThenPreemptsFalse},
	{"ThenPreemptsThroughBusySpec", testSchedThenPreemptsThroughBusy},
	{"ContinuousOnlyLoses", testSchedContinuousOnlyLoses},
	{"WeightZeroNeverScheduled", testSchedWeightZero},
}

// choose runs one GetWork of one unit and returns the spec it came from
// ("" for no work).
func (e *env) choose() string {
	e.t.Helper()
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 1})
	if len(as) == 0 {
		return ""
	}
	return as[0].Spec.Bytes
}

func testSchedSpecPriority(e *env) {
	e.spec(m{"name": "low", "weight": 1000})
	e.spec(m{"name": "high", "priority": 1, "weight": 1})
	e.add("low", coordinate.WorkUnitInput{Key: text("l"), Data: enc(e.t, m{}), Priority: ptr(100.0)})
	e.addKeys("high", "h1", "h2", "h3")
	for i := 0; i < 3; i++ {
		if got := e.choose(); got != "high" {
			e.t.Errorf("choice %d = %q, want the spec with priority 1", i, got)
		}
	}
	if got := e.choose(); got != "low" {
		e.t.Errorf("last choice = %q, want low", got)
	}
}

func testSchedUnitPriority(e *env) {
	e.spec(m{"name": "a", "weight": 1})
	e.spec(m{"name": "b", "weight": 1000})
	e.add("a", coordinate.WorkUnitInput{Key: text("a9"), Data: enc(e.t, m{}), Priority: ptr(9.0)})
	e.addKeys("a", "a0")
	e.addKeys("b", "b0", "b1")
	if got := e.choose(); got != "a" {
		e.t.Errorf("first choice = %q, want a (its best unit has priority 9)", got)
	}
	// Now all remaining units have priority 0 and weight decides.
	if got := e.choose(); got != "b" {
		e.t.Errorf("second choice = %q, want b (weight 1000)", got)
	}
	// Negative unit priorities do not starve a spec.
	e.spec(m{"name": "neg"})
	e.add("neg", coordinate.WorkUnitInput{Key: text("n"), Data: enc(e.t, m{}), Priority: ptr(-5.0)})
	e.fail("a", "a0")
	e.fail("b", "b1")
	if got := e.choose(); got != "neg" {
		e.t.Errorf("choice with only a negative-priority unit = %q, want neg", got)
	}
}

func testSchedWeight300(e *env) {
	e.spec(m{"name": "one", "weight": 1})
	e.spec(m{"name": "many", "weight": 300})
	e.addKeys("one", "o")
	e.addKeys("many", "m")
	if got := e.choose(); got != "many" {
		e.t.Errorf("choice = %q, want many (weight 300 vs 1)", got)
	}
}

func testSchedWeights6And4(e *env) {
	// Lowest (1+pending)/weight first, ties by name: a has weight 4, b 6.
	e.spec(m{"name": "a", "weight": 4})
	e.spec(m{"name": "b", "weight": 6})
	e.addKeys("a", keysN("a", 10)...)
	e.addKeys("b", keysN("b", 10)...)
	var got []string
	for i := 0; i < 10; i++ {
		got = append(got, e.choose())
	}
	want := "b a b a b b a b a b"
	if strings.Join(got, " ") != want {
		e.t.Errorf("choices = %q, want %q", strings.Join(got, " "), want)
	}
}

func testSchedTieByName(e *env) {
	e.spec(m{"name": "zz", "weight": 5})
	e.spec(m{"name": "aa", "weight": 5})
	e.addKeys("zz", "z1", "z2")
	e.addKeys("aa", "a1", "a2")
	if got := e.choose(); got != "aa" {
		e.t.Errorf("tie: choice = %q, want aa (by name)", got)
	}
	if got := e.choose(); got != "zz" {
		e.t.Errorf("choice after aa got one pending = %q, want zz", got)
	}
}

func testSchedThenPreempts(e *env) {
	// b is a's successor: it wins while it has work, despite its weight.
	e.spec(m{"name": "a", "then": "b", "weight": 100})
	e.spec(m{"name": "b", "weight": 1})
	e.addKeys("a", "a1", "a2")
	e.addKeys("b", "b1", "b2")
	want := []string{"b", "b", "a", "a"}
	for i, w := range want {
		if got := e.choose(); got != w {
			e.t.Errorf("choice %d = %q, want %q (the successor spec first)", i, got, w)
		}
	}
}

func testSchedThenPreemptsChain(e *env) {
	// In a -> b -> c the most downstream spec with work wins (Py).
	e.spec(m{"name": "a", "then": "b", "weight": 100})
	e.spec(m{"name": "b", "then": "c", "weight": 50})
	e.spec(m{"name": "c", "weight": 1})
	e.addKeys("a", "a1", "a2")
	e.addKeys("b", "b1", "b2")
	e.addKeys("c", "c1", "c2")
	want := []string{"c", "c", "b", "b", "a", "a"}
	for i, w := range want {
		if got := e.choose(); got != w {
			e.t.Errorf("choice %d = %q, want %q (the most downstream spec with work)", i, got, w)
		}
	}
}

func testSchedThenPreemptsFalse(e *env) {
	e.spec(m{"name": "a", "then": "b", "then_preempts": false, "weight": 100})
	e.spec(m{"name": "b", "weight": 1})
	e.addKeys("a", "a1")
	e.addKeys("b", "b1")
	if got := e.choose(); got != "a" {
		e.t.Errorf("choice = %q, want a (then_preempts false, weight 100 vs 1)", got)
	}
}

func testSchedThenPreemptsThroughBusy(e *env) {
	// In a -> b -> c with every unit of b leased, c still wins: Python's
	// path scheduler walked the whole path, and b lets its successor
	// preempt. With b's then_preempts false, load decides (a's weight).
	for _, preempts := range []bool{true, false} {
		e.spec(m{"name": "a", "then": "b", "weight": 100})
		e.spec(m{"name": "b", "then": "c", "then_preempts": preempts, "weight": 1})
		e.spec(m{"name": "c", "weight": 1})
		e.spec(m{"name": "z", "then": "a"}) // never had a unit
		e.addKeys("b", "b1")
		e.addKeys("a", "a1", "a2")
		e.addKeys("c", "c1", "c2")
		// Lease b's only unit by name, so b has nothing to hand out.
		if as := e.work(coordinate.WorkRequest{Worker: text("wb"), MaxJobs: 1, WorkSpecs: []string{"b"}}); len(as) != 1 {
			e.t.Fatalf("lease of b's unit: %d attempts, want 1", len(as))
		}
		want := "c"
		if !preempts {
			want = "a"
		}
		if got := e.choose(); got != want {
			e.t.Errorf("b then_preempts %v: choice = %q, want %q", preempts, got, want)
		}
		for _, name := range []string{"a", "b", "c", "z"} {
			if err := e.ns.DeleteWorkSpec(e.ctx, name); err != nil {
				e.t.Fatal(err)
			}
		}
	}
}

func testSchedContinuousOnlyLoses(e *env) {
	e.spec(m{"name": "cont", "continuous": true, "weight": 1000})
	e.spec(m{"name": "real", "weight": 1})
	e.addKeys("real", "r1", "r2")
	for i := 0; i < 2; i++ {
		if got := e.choose(); got != "real" {
			e.t.Errorf("choice %d = %q, want real (a continuous-only spec loses to real units)", i, got)
		}
	}
	if got := e.choose(); got != "cont" {
		e.t.Errorf("choice with no real units = %q, want cont", got)
	}
}

func testSchedWeightZero(e *env) {
	e.spec(m{"name": "zero", "weight": 0})
	e.addKeys("zero", "z")
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
	e.noWork(coordinate.WorkRequest{Worker: text("w"), WorkSpecs: []string{"zero"}})
	e.checkCounts("zero", map[coordinate.Status]int{coordinate.StatusAvailable: 1})
	e.control("zero", coordinate.WorkSpecControl{Weight: ptr(2)})
	if got := e.choose(); got != "zero" {
		e.t.Errorf("after weight 2: choice = %q, want zero", got)
	}
	e.spec(m{"name": "neg", "weight": 5})
	e.addKeys("neg", "n")
	e.control("neg", coordinate.WorkSpecControl{Weight: ptr(-1)})
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
}
