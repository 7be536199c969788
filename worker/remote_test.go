package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/testdaemon"
)

// remoteEnv is a daemon of ours with a plain client for the test and a
// Remote for the worker.
type remoteEnv struct {
	t   *testing.T
	ctx context.Context
	c   *client.Client
	r   *Remote
}

func newRemoteEnv(t *testing.T, backend string) *remoteEnv {
	addr := testdaemon.Ours(t, backend)
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r, err := NewRemote(client.DefaultConfig(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return &remoteEnv{t: t, ctx: t.Context(), c: c, r: r}
}

func (e *remoteEnv) spec(def map[string]any) {
	e.t.Helper()
	m := map[any]any{}
	for k, v := range def {
		m[cbor.ByteString(k)] = v
	}
	if err := e.c.SetWorkSpec(e.ctx, m); err != nil {
		e.t.Fatal(err)
	}
}

func (e *remoteEnv) add(spec string, keys ...string) {
	e.t.Helper()
	units := make([]client.NewUnit, len(keys))
	for i, k := range keys {
		units[i] = client.NewUnit{Key: []byte(k), Data: map[any]any{cbor.ByteString("k"): []byte(k)}}
	}
	if err := e.c.AddWorkUnits(e.ctx, spec, units); err != nil {
		e.t.Fatal(err)
	}
}

func (e *remoteEnv) status(spec, key string) int {
	e.t.Helper()
	st, err := e.c.GetWorkUnitStatus(e.ctx, spec, []any{[]byte(key)})
	if err != nil || st[0] == nil {
		e.t.Fatalf("status of %s/%s: %v", spec, key, err)
	}
	return st[0].Status
}

// Through a daemon: Go specs are run by task, Python specs left alone; the
// worker is listed with the Python worker's heartbeat shape.
func TestRemoteWorker(t *testing.T) {
	for _, backend := range testdaemon.Backends {
		t.Run(backend, func(t *testing.T) {
			e := newRemoteEnv(t, backend)
			e.spec(map[string]any{"name": "greet", "runtime": "go", "task": "hello"})
			e.spec(map[string]any{"name": "py", "module": "m", "run_function": "f"})
			e.add("greet", "g1", "g2", "g3")
			e.add("py", "p1")
			w, err := New(e.r, Config{ID: "remote-go", MaxJobs: 2, Concurrency: 2, NoSignals: true, LongPoll: time.Second,
				Logger: slog.New(slog.DiscardHandler), IdleMin: 10 * time.Millisecond, IdleMax: 50 * time.Millisecond,
				Tasks: map[string]Task{"hello": func(ctx context.Context, as []*Attempt) {
					for _, a := range as {
						var d map[string]string
						if err := a.Unmarshal(&d); err != nil || d["k"] != a.Key() {
							t.Errorf("unit %s data %v (%v)", a, d, err)
						}
						if err := a.Finish(ctx, nil); err != nil {
							t.Error(err)
						}
					}
				}}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(e.ctx)
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()
			waitFor(t, "greet finished", func() bool {
				return e.status("greet", "g1") == 4 && e.status("greet", "g2") == 4 && e.status("greet", "g3") == 4
			})
			if st := e.status("py", "p1"); st != 1 {
				t.Errorf("python unit status %d, want 1 (available)", st)
			}
			modes, err := e.c.ListWorkerModes(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m, ok := client.Get(modes, "remote-go"); !ok || fmt.Sprint(m) != "[82 85 78]" {
				t.Errorf("list_worker_modes: %v, want remote-go in mode 'RUN'", modes)
			}
			info, err := e.c.GetWorkerInfo(e.ctx, []byte("remote-go"))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := client.Get(info, "pid"); !ok {
				t.Errorf("worker info %v lacks pid", info)
			}
			cancel()
			if err := recv(t, "Run to return", done); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A late update with a lease token is refused once the unit was leased to
// another worker.
func TestRemoteFencing(t *testing.T) {
	for _, backend := range testdaemon.Backends {
		t.Run(backend, func(t *testing.T) {
			e := newRemoteEnv(t, backend)
			e.spec(map[string]any{"name": "go", "runtime": "go"})
			e.add("go", "u")
			req := coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w1", Text: true}, MaxJobs: 1,
				LeaseTime: time.Minute, Runtimes: []string{"go"}, Tasks: []string{"go"}}
			first, err := e.r.GetWork(e.ctx, req)
			if err != nil || len(first) != 1 || first[0].ID == 0 {
				t.Fatalf("first lease: %+v, %v", first, err)
			}
			// The lease ends (as when it expires) and another worker takes it.
			back := -1.0
			if err := e.c.UpdateWorkUnit(e.ctx, "go", []byte("u"), client.UnitUpdate{LeaseTime: &back}); err != nil {
				t.Fatal(err)
			}
			req.Worker.Bytes = "w2"
			req.MaxJobs = 5
			second, err := e.r.GetWork(e.ctx, req)
			if err != nil || len(second) != 1 || second[0].ID == first[0].ID {
				t.Fatalf("second lease: %+v, %v", second, err)
			}
			ref := func(a coordinate.Attempt) coordinate.AttemptRef {
				return coordinate.AttemptRef{Spec: a.Spec.Bytes, Key: a.Key.Bytes, ID: a.ID}
			}
			err = e.r.UpdateAttempt(e.ctx, ref(first[0]), coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
			if !errors.Is(err, coordinate.ErrLostLease) {
				t.Fatalf("late finish: %v, want lost lease", err)
			}
			if st := e.status("go", "u"); st != 3 {
				t.Fatalf("after the late finish: status %d, want 3 (still pending)", st)
			}
			if err := e.r.UpdateAttempt(e.ctx, ref(second[0]), coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
				t.Fatal(err)
			}
			if st := e.status("go", "u"); st != 4 {
				t.Fatalf("status %d, want 4", st)
			}
		})
	}
}

// An idle worker long-polls: a unit added while it waits is run without
// the idle back-off (an hour here) getting in the way.
func TestRemoteLongPoll(t *testing.T) {
	for _, backend := range testdaemon.Backends {
		t.Run(backend, func(t *testing.T) {
			e := newRemoteEnv(t, backend)
			e.spec(map[string]any{"name": "lp", "runtime": "go"})
			polls := make(chan struct{}, 100)
			q := &countingPoller{Remote: e.r, polls: polls}
			w, err := New(q, Config{NoSignals: true, LongPoll: time.Second, IdleMin: time.Hour, IdleMax: time.Hour,
				Logger: slog.New(slog.DiscardHandler),
				Tasks:  map[string]Task{"lp": finishAll}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(e.ctx)
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()
			recv(t, "the first poll", polls)
			e.add("lp", "u")
			waitFor(t, "the unit finished", func() bool { return e.status("lp", "u") == 4 })
			cancel()
			if err := recv(t, "Run to return", done); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// countingPoller reports each long poll as it starts.
type countingPoller struct {
	*Remote
	polls chan struct{}
}

func (p *countingPoller) GetWorkWait(ctx context.Context, req coordinate.WorkRequest, wait time.Duration) ([]coordinate.Attempt, error) {
	p.polls <- struct{}{}
	return p.Remote.GetWorkWait(ctx, req, wait)
}

// The Python daemon ignores the Go-worker options: it answers get_work at
// once, without tokens, and hands out any spec. The worker still runs its
// own specs (unfenced) and gives a Python spec's unit back untouched.
func TestRemoteOnPythonDaemon(t *testing.T) {
	addr := testdaemon.Python(t)
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := NewRemote(client.DefaultConfig(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	e := &remoteEnv{t: t, ctx: t.Context(), c: c, r: r}
	e.spec(map[string]any{"name": "go", "runtime": "go", "min_gb": 1})
	e.add("go", "g1", "g2")
	logs := &logRecorder{}
	w, err := New(r, Config{NoSignals: true, MaxJobs: 5, IdleMin: 10 * time.Millisecond, IdleMax: 50 * time.Millisecond,
		Logger: slog.New(logs), Tasks: map[string]Task{"go": finishAll}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	waitFor(t, "the Go units finished", func() bool { return e.status("go", "g1") == 4 && e.status("go", "g2") == 4 })

	// It notices that get_work answers at once and stops long-polling
	// (whose calls a stop cancels, losing what they lease).
	waitFor(t, "long-polling off", func() bool { return logs.saw("the queue answers long polls at once") })

	// A Python spec is handed out too; the worker gives it back.
	e.spec(map[string]any{"name": "py", "min_gb": 1, "module": "m", "run_function": "f"})
	e.add("py", "p1")
	waitFor(t, "the Python unit refused", func() bool { return logs.saw("getting work") })
	cancel()
	if err := recv(t, "Run to return", done); err != nil {
		t.Fatal(err)
	}
	if st := e.status("py", "p1"); st != 1 {
		t.Errorf("python unit status %d after the Go worker stopped, want 1 (given back); worker log:\n%s", st, strings.Join(logs.msgs, "\n"))
	}
}

// A long poll's lease runs from when the daemon found the unit, not from
// when the poll began: a unit added 1.5 s into a 3 s poll, with a 1 s
// lease, is the task's for about 1 s. Measured from the poll's start the
// lease looked over before the task began: the task was cancelled and the
// unit failed at once.
func TestLongPollLeaseRunsFromTheReply(t *testing.T) {
	daemon := testdaemon.Ours(t, "memory")
	c := testdaemon.Dial(t, daemon)
	ctx := t.Context()
	if err := c.SetWorkSpec(ctx, map[any]any{cbor.ByteString("name"): "s", cbor.ByteString("runtime"): "go"}); err != nil {
		t.Fatal(err)
	}
	r, err := NewRemote(client.DefaultConfig(daemon))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	finished := make(chan error, 1)
	w, err := New(r, Config{NoSignals: true, Lease: time.Second, LongPoll: 3 * time.Second,
		Logger: slog.New(slog.DiscardHandler),
		Tasks: map[string]Task{"s": func(ctx context.Context, as []*Attempt) {
			if left := time.Until(as[0].Expires()); left < 500*time.Millisecond || ctx.Err() != nil {
				t.Errorf("the task began with %v of its 1 s lease left (context: %v)", left, ctx.Err())
			}
			time.Sleep(100 * time.Millisecond)
			finished <- as[0].Finish(context.Background(), nil)
		}}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(1500 * time.Millisecond) // the worker is in its long poll
	if err := c.AddWorkUnits(ctx, "s", []client.NewUnit{{Key: []byte("u"), Data: map[any]any{}}}); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, "finish", finished); err != nil {
		t.Errorf("finishing 100 ms into the lease: %v", err)
	}
}

// A finish whose reply is lost is not sent again blindly (the client
// never re-sends a change once written): the unit's status shows it was
// applied, and the finish succeeds. It used to be re-sent, meet its spent
// lease, and be reported lost although the unit was FINISHED.
func TestFinishWithLostReplySucceeds(t *testing.T) {
	daemon := testdaemon.Ours(t, "memory")
	c := testdaemon.Dial(t, daemon)
	ctx := t.Context()
	if err := c.SetWorkSpec(ctx, map[any]any{cbor.ByteString("name"): "s", cbor.ByteString("runtime"): "go"}); err != nil {
		t.Fatal(err)
	}
	// u is finished below; v and w are left for the lost get_work, so a
	// get_work sent again would lease a second one.
	if err := c.AddWorkUnits(ctx, "s", []client.NewUnit{{Key: []byte("u"), Data: map[any]any{}}, {Key: []byte("v"), Data: map[any]any{}}, {Key: []byte("w"), Data: map[any]any{}}}); err != nil {
		t.Fatal(err)
	}
	p := testdaemon.NewLossyProxy(t, daemon)
	cfg := client.DefaultConfig(p.Addr)
	cfg.BaseRetry = time.Millisecond
	r, err := NewRemote(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	req := coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}, LeaseTime: time.Minute, Runtimes: []string{"go"}, Tasks: []string{"s"}}
	as, err := r.GetWork(ctx, req)
	if err != nil || len(as) != 1 {
		t.Fatalf("get_work: %v %v", as, err)
	}
	p.Armed.Store(true)
	if err := r.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "s", Key: as[0].Key.Bytes, ID: as[0].ID},
		coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		t.Errorf("finish with its reply lost: %v", err)
	}
	if st, err := c.GetWorkUnitStatus(ctx, "s", []any{[]byte(as[0].Key.Bytes)}); err != nil || st[0].Status != int(coordinate.StatusFinished) {
		t.Errorf("unit after the finish: %+v %v", st, err)
	}

	// get_work with its reply lost: not sent again, so not a second lease.
	p.Armed.Store(true)
	if _, err := r.GetWork(ctx, req); !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Errorf("get_work with its reply lost: %v, want ErrOutcomeUnknown", err)
	}
	if counts, err := c.CountWorkUnits(ctx, "s"); err != nil || counts[int(coordinate.StatusPending)] > 1 {
		t.Errorf("counts after a lost get_work reply %v %v: at most one lease", counts, err)
	}
}
