package coordinatetest

import (
	"regexp"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// continuousTests cover synthetic units of continuous specs (SEMANTICS §9).
var continuousTests = []test{
	{"Interval", testContinuousInterval},
	{"OnePerCall", testContinuousOnePerCall},
	{"NoneWhilePending", testContinuousNoneWhilePending},
	{"RealUnitsFirst", testContinuousRealUnitsFirst},
	{"ControlFlag", testContinuousControlFlag},
	{"NotContinuous", testContinuousNotContinuous},
}

var continuousKey = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)

// synthetic asks for work and checks that exactly one synthetic unit of
// spec "c" comes back; it returns its key.
func (e *env) synthetic(maxJobs int) string {
	e.t.Helper()
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: maxJobs})
	if len(as) != 1 {
		e.t.Fatalf("at %s: GetWork(max_jobs %d) = %q, want one synthetic unit", e.now().Sub(Epoch), maxJobs, attemptKeys(as))
	}
	a := as[0]
	if a.Spec.Bytes != "c" || !continuousKey.MatchString(a.Key.Bytes) {
		e.t.Errorf("synthetic unit %q/%q, want spec c and a key of digits.digits", a.Spec.Bytes, a.Key.Bytes)
	}
	checkData(e.t, "synthetic unit data", a.Data, m{})
	u := e.mustGet("c", a.Key.Bytes)
	if u.Status != coordinate.StatusPending {
		e.t.Errorf("synthetic unit status = %v, want pending", u.Status)
	}
	return a.Key.Bytes
}

func testContinuousInterval(e *env) {
	e.spec(m{"name": "c", "continuous": true, "interval": 60})
	at := func(d time.Duration) { e.clock.Set(Epoch.Add(d)) }
	k1 := e.synthetic(1)
	e.finish("c", k1, nil)
	at(59 * time.Second)
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
	at(60 * time.Second)
	k2 := e.synthetic(1)
	if k2 == k1 {
		e.t.Errorf("second synthetic unit reused key %q", k1)
	}
	at(90 * time.Second)
	e.finish("c", k2, nil)
	at(119 * time.Second)
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
	at(120 * time.Second)
	e.synthetic(1)
	e.checkCounts("c", map[coordinate.Status]int{coordinate.StatusFinished: 2, coordinate.StatusPending: 1})
}

func testContinuousOnePerCall(e *env) {
	e.spec(m{"name": "c", "continuous": true})
	e.synthetic(10)
	e.checkCounts("c", map[coordinate.Status]int{coordinate.StatusPending: 1})
}

func testContinuousNoneWhilePending(e *env) {
	e.spec(m{"name": "c", "continuous": true})
	k := e.synthetic(1)
	e.clock.Add(time.Second)
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
	e.finish("c", k, nil)
	e.clock.Add(time.Second)
	if k2 := e.synthetic(1); k2 == k {
		e.t.Errorf("new synthetic unit reused key %q", k)
	}
}

func testContinuousRealUnitsFirst(e *env) {
	e.spec(m{"name": "c", "continuous": true})
	e.add("c", e.unit("real", m{"r": 1}))
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 5})
	e.checkKeys("GetWork on a continuous spec with a real unit", attemptKeys(as), []string{"real"})
	e.finish("c", "real", nil)
	e.synthetic(5)
}

func testContinuousControlFlag(e *env) {
	e.spec(m{"name": "c", "continuous": true})
	e.control("c", coordinate.WorkSpecControl{Continuous: ptr(false)})
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
	e.control("c", coordinate.WorkSpecControl{Continuous: ptr(true)})
	e.synthetic(1)
}

func testContinuousNotContinuous(e *env) {
	e.spec(m{"name": "c", "interval": 1})
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
	e.spec(m{"name": "p", "continuous": true, "disabled": true})
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
	e.checkCounts("p", nil)
}
