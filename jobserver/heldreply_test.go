package jobserver

import (
	"context"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/replyhold"
	"github.com/coordinated/coordinated/journal"
	"github.com/coordinated/coordinated/memory"
)

// callHeld runs a request the way cborrpc does for a top-level request
// (a Hold in the context) and returns the reply, built from the journal's
// outcome when the backend deferred its wait.
func callHeld(t *testing.T, js *JobServer, method string, params ...any) string {
	t.Helper()
	var h replyhold.Hold
	ctx := replyhold.With(context.Background(), &h)
	res, err := js.Handle(ctx, request(t, method, params...))
	held := h.Take()
	if held.Await != nil {
		ch := make(chan error, 1)
		held.Await(func(e error) { ch <- e })
		outcome := <-ch
		if held.Build != nil {
			res, err = held.Build(outcome)
		} else if outcome != nil {
			res, err = nil, outcome
		}
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return diag(t, res)
}

// An update_work_unit the backend refuses is answered with its error even
// when the same call committed an expiry on the way, with the request
// offering to hold its reply (as cborrpc does): the held reply is built
// from the journal's outcome alone and would say (true, null).
func TestHeldUpdateKeepsBackendError(t *testing.T) {
	clock := coordinate.NewFakeClock(start)
	be, err := memory.Open(context.Background(), memory.Options{Clock: clock, DataDir: t.TempDir(), Sync: journal.SyncGroup})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	ns, err := be.Namespace(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	js := New(ns, Config{Clock: clock})
	addSpec(t, js, "ws", nil)

	// No expiry pending: the in-band error.
	expect(t, "unknown spec", callHeld(t, js, "update_work_unit", b("nospec"), b("k"), m{"status": 3}),
		`128([false, 'no such work_spec \'nospec\''])`)

	// A worker record that expires at once: the next call commits its expiry.
	call(t, js, "worker_heartbeat", b("w1"), b("run"), 0, m{}, nil)
	clock.Add(time.Second)
	expect(t, "unknown spec with an expiry pending", callHeld(t, js, "update_work_unit", b("nospec"), b("k"), m{"status": 3}),
		`128([false, 'no such work_spec \'nospec\''])`)

	// A fenced finish whose lease ran out: lease lost, not (true, null).
	call(t, js, "add_work_units", b("ws"), []any{tuple{b("u1"), m{}}})
	call(t, js, "get_work", b("gw"), m{"lease_time": 1, "lease_token": true})
	clock.Add(2 * time.Second)
	got := callHeld(t, js, "update_work_unit", b("ws"), b("u1"), m{"status": 3, "lease_token": 1})
	if got == `128([true, null])` {
		t.Errorf("fenced finish after the lease expired answered %s; the unit is %s", got,
			call(t, js, "get_work_unit_status", b("ws"), []any{b("u1")}))
	}
}
