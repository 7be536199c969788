package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

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

// TestNoJITKeepsTheURLsSetting: a URL that sets jit itself keeps it.
func TestNoJITKeepsTheURLsSetting(t *testing.T) {
	for url, want := range map[string]string{
		"postgres://u@127.0.0.1/db":        "off",
		"postgres://u@127.0.0.1/db?jit=on": "on",
	} {
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		noJIT(cfg)
		if got := cfg.RuntimeParams["jit"]; got != want {
			t.Errorf("%s: jit = %q, want %q", url, got, want)
		}
	}
}
