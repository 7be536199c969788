package postgres

import "testing"

// TestSessionsRunWithoutJIT: the pool's sessions have JIT off (see noJIT),
// so a deep queue's generic plans are not compiled on every claim.
func TestSessionsRunWithoutJIT(t *testing.T) {
	b, _ := openBackend(t, freshSchema(t), Options{})
	var jit string
	if err := b.pool.QueryRow(t.Context(), "SHOW jit").Scan(&jit); err != nil {
		t.Fatal(err)
	}
	if jit != "off" {
		t.Errorf("jit = %q in the daemon's sessions, want off", jit)
	}
}
