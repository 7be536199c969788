package postgres

import (
	"testing"
	"time"

	"github.com/coordinated/coordinated/postgres/cachekeep"
)

// settle waits for the background work of e's cache machinery and returns
// what it ran.
func (e *fastEnv) settle() cachekeep.Runs {
	e.t.Helper()
	k, ok := e.b.cache.(keeper)
	if !ok {
		e.t.Fatalf("the backend's cache machinery is %T, want keeper", e.b.cache)
	}
	return k.k.Settle()
}

// TestCacheKeeping: the request paths tell the machinery what they did (its
// own tests, in cachekeep, check what it makes of it): a big claim reads
// ahead (claiming) and a later one keeps reading ahead (claimed), claims
// are vacuumed behind (committed), and a bulk add warms its queue's front
// (added).
func TestCacheKeeping(t *testing.T) {
	e := newFastEnvWith(t, Options{VacuumAfterClaims: 10})
	e.spec(map[string]any{"name": "s"})
	e.add("s", numbered(2000)...)
	e.claim("s", 1000)
	if r := e.settle(); r.ReadAheads != 1 || r.Vacuums != 1 {
		t.Fatalf("after a big claim: %+v, want 1 read-ahead and 1 VACUUM", r)
	}
	// The read-ahead found its units cached: past the quiet time the next
	// claim reads ahead of itself again.
	e.clock.Add(time.Minute)
	e.claim("s", 100)
	if r := e.settle(); r.ReadAheads != 2 || r.Vacuums != 2 {
		t.Fatalf("after the next claim: %+v, want 2 read-aheads and 2 VACUUMs", r)
	}
	// A bulk add arms a warm of the queue front, which starts once adds
	// went quiet for a second.
	e.spec(map[string]any{"name": "w"})
	e.add("w", numbered(10000)...)
	waitFor(t, "the warm after a bulk add", func() bool { return e.settle().ReadAheads == 3 })
}

// TestNoCacheKeeping: with the machinery off the backend has none, and the
// request paths work without it.
func TestNoCacheKeeping(t *testing.T) {
	e := newFastEnvWith(t, Options{NoCacheKeeping: true, VacuumAfterClaims: 10})
	if _, ok := e.b.cache.(noKeeper); !ok {
		t.Fatalf("with NoCacheKeeping the cache machinery is %T, want noKeeper", e.b.cache)
	}
	e.spec(map[string]any{"name": "s"})
	e.add("s", numbered(2000)...)
	e.claim("s", 1000)
}
