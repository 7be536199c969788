package postgres

import "testing"

// TestNoCacheKeeping: with the machinery off, claims big enough to read
// ahead and to be vacuumed after start neither.
func TestNoCacheKeeping(t *testing.T) {
	e := newFastEnvWith(t, Options{NoCacheKeeping: true, VacuumAfterClaims: 10})
	e.spec(map[string]any{"name": "s"})
	e.add("s", numbered(2*readAheadMin)...)
	e.claim("s", readAheadMin)
	e.b.readAhead.wg.Wait()
	e.b.vacuum.run.wait()
	if n := e.b.readAhead.runs.Load(); n != 0 {
		t.Errorf("%d read-aheads with the cache machinery off, want 0", n)
	}
	if n := e.b.vacuum.runs.Load(); n != 0 {
		t.Errorf("%d VACUUMs with the cache machinery off, want 0", n)
	}
}
