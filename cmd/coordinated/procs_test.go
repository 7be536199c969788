package main

import (
	"io"
	"log/slog"
	"runtime"
	"testing"
)

// The daemon adds one processor for the journal's group syncs exactly
// under a durable memory backend with -sync group, unless GOMAXPROCS is
// set, and setting it again does not add another.
func TestSyncProcessor(t *testing.T) {
	defer runtime.SetDefaultGOMAXPROCS()
	runtime.SetDefaultGOMAXPROCS()
	base := runtime.GOMAXPROCS(0)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	noEnv := func(string) string { return "" }
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"-data-dir", t.TempDir()}, base + 1},
		{[]string{"-data-dir", t.TempDir(), "-sync", "group"}, base + 1},
		{[]string{"-data-dir", t.TempDir(), "-sync", "none"}, base},
		{[]string{"-data-dir", t.TempDir(), "-sync", "interval=2ms"}, base},
		{[]string{"-backend", "memory:"}, base},
		{[]string{"-data-dir", ""}, base},
		{[]string{"-backend", "postgres://localhost/x"}, base},
	} {
		opts, err := parseOptions(c.args, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		for range 2 {
			setProcessors(&opts.storage, noEnv, log)
			if got := runtime.GOMAXPROCS(0); got != c.want {
				t.Errorf("%q: GOMAXPROCS %d, want %d", c.args, got, c.want)
			}
		}
	}
	runtime.GOMAXPROCS(base + 5)
	opts, err := parseOptions([]string{"-data-dir", t.TempDir()}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	setProcessors(&opts.storage, func(k string) string {
		if k == "GOMAXPROCS" {
			return "7"
		}
		return ""
	}, log)
	if got := runtime.GOMAXPROCS(0); got != base+5 {
		t.Errorf("with GOMAXPROCS in the environment: GOMAXPROCS %d, want it left at %d", got, base+5)
	}
}
