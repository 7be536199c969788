package jobserver

import (
	"context"
	"testing"
	"time"

	"coordinated/coordinate"
	"coordinated/memory"
)

// start is the fake clock's starting time in tests.
var start = time.Unix(1_700_000_000, 0)

// newServer returns a JobServer over a fresh memory backend with a fake
// clock.
func newServer(t *testing.T, cfg Config) (*JobServer, *coordinate.FakeClock) {
	t.Helper()
	clock := coordinate.NewFakeClock(start)
	be := memory.New(memory.Options{Clock: clock})
	t.Cleanup(func() { be.Close() })
	ns, err := be.Namespace(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clock = clock
	return New(ns, cfg), clock
}

// addSpec creates a spec with a byte-string name.
func addSpec(t *testing.T, js *JobServer, name string, extra m) {
	t.Helper()
	def := m{"name": b(name), "min_gb": 1}
	for k, v := range extra {
		def[k] = v
	}
	expect(t, "set_work_spec "+name, call(t, js, "set_work_spec", def), `128([true, null])`)
}
