// Package coordinatetest is the conformance suite every coordinate.Backend
// runs. It is written only against the coordinate.Backend and
// coordinate.Namespace interfaces and checks the behaviour the contract
// promises (coordinate/interface.go, coordinate/types.go) together with the
// rules of the spec documents (SEMANTICS.md, DECISIONS.md).
//
// A backend hooks it up with one test:
//
//	func TestConformance(t *testing.T) {
//		coordinatetest.Run(t, func(t *testing.T, c *coordinate.FakeClock) coordinate.Backend {
//			return mybackend.New(c)
//		})
//	}
//
// Every test gets a fresh backend from the factory, a FakeClock starting at
// Epoch, and its own namespace (named after the test plus a suffix unique
// to this run), so a backend shared by many tests, or a database reused
// across runs, stays isolated. Time moves only through FakeClock.Add; no
// test sleeps or measures time.
package coordinatetest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// Factory returns a fresh, empty backend whose clock is clock.
type Factory func(t *testing.T, clock *coordinate.FakeClock) coordinate.Backend

// Epoch is the time every test's FakeClock starts at.
var Epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// test is one conformance test.
type test struct {
	name string
	fn   func(e *env)
}

// group is a named set of tests, run as one level of subtests.
type group struct {
	name  string
	tests []test
}

// groups lists every conformance test, by topic; each topic lives in the
// file of the same name.
func groups() []group {
	return []group{
		{"Namespaces", namespaceTests},
		{"Specs", specTests},
		{"Units", unitTests},
		{"Update", updateTests},
		{"GetWork", getWorkTests},
		{"Scheduler", schedulerTests},
		{"Leases", leaseTests},
		{"Continuous", continuousTests},
		{"Chaining", chainingTests},
		{"Workers", workerTests},
		{"Archive", archiveTests},
		{"Dependencies", depTests},
		{"Groups", groupTests},
		{"Import", importTests},
		{"Concurrency", concurrencyTests},
		{"Locks", lockTests},
		{"Fidelity", fidelityTests},
		{"Stats", statsTests},
		{"OwnerDeath", ownerDeathTests},
	}
}

// Run runs every conformance test as subtests of t.
func Run(t *testing.T, factory Factory) {
	// The wall clock only makes namespace names unique across runs.
	run := "@" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, g := range groups() {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					tc.fn(newEnv(t, factory, run))
				})
			}
		})
	}
}

// env is one test's world: its clock, backend and namespace.
type env struct {
	t     *testing.T
	run   string // suffix of namespace names, unique to this Run
	ctx   context.Context
	clock *coordinate.FakeClock
	b     coordinate.Backend
	ns    coordinate.Namespace
}

func newEnv(t *testing.T, factory Factory, run string) *env {
	t.Helper()
	clock := coordinate.NewFakeClock(Epoch)
	b := factory(t, clock)
	if b == nil {
		t.Fatal("coordinatetest: factory returned a nil backend")
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("coordinatetest: closing backend: %v", err)
		}
	})
	ctx := t.Context()
	ns, err := b.Namespace(ctx, t.Name()+run)
	if err != nil {
		t.Fatalf("coordinatetest: Namespace(%q): %v", t.Name()+run, err)
	}
	return &env{t: t, run: run, ctx: ctx, clock: clock, b: b, ns: ns}
}

// now is the fake clock's current time.
func (e *env) now() time.Time { return e.clock.Now() }

// sub returns the environment of a subtest t of e's test: the same backend
// and clock, and a fresh namespace named after the subtest.
func sub(e *env, t *testing.T) *env {
	t.Helper()
	ctx := t.Context()
	ns, err := e.b.Namespace(ctx, t.Name()+e.run)
	if err != nil {
		t.Fatalf("coordinatetest: Namespace(%q): %v", t.Name()+e.run, err)
	}
	return &env{t: t, run: e.run, ctx: ctx, clock: e.clock, b: e.b, ns: ns}
}
