package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// finishAll is a task that finishes every attempt.
func finishAll(ctx context.Context, as []*Attempt) {
	for _, a := range as {
		if err := a.Finish(ctx, nil); err != nil {
			panic(err)
		}
	}
}

// Tasks are found by the spec's `task` key, else its name; specs of other
// tasks and Python specs are never leased; the worker registers with the
// Python worker's heartbeat shape, heartbeats and unregisters.
func TestRunsTasksByName(t *testing.T) {
	e := newEnv(t)
	e.spec(map[string]any{"name": "hello", "runtime": "go"})
	e.spec(map[string]any{"name": "greeting", "runtime": "go", "task": "hello"})
	e.spec(map[string]any{"name": "other", "runtime": "go", "task": "nope"})
	e.spec(map[string]any{"name": "py", "module": "m", "run_function": "f"})
	e.add("hello", "h1", "h2")
	e.add("greeting", "g1")
	e.add("other", "o1")
	e.add("py", "p1")
	var mu sync.Mutex
	seen := map[string]bool{}
	r := e.start(Config{ID: "gw", Tasks: map[string]Task{"hello": func(ctx context.Context, as []*Attempt) {
		mu.Lock()
		for _, a := range as {
			seen[a.Spec()+"/"+a.Key()] = true
		}
		mu.Unlock()
		finishAll(ctx, as)
	}}})
	waitFor(t, "hello and greeting finished", func() bool {
		return e.count("hello", coordinate.StatusFinished) == 2 && e.count("greeting", coordinate.StatusFinished) == 1
	})
	if e.count("other", coordinate.StatusAvailable) != 1 || e.count("py", coordinate.StatusAvailable) != 1 {
		t.Errorf("other or py leased: other %v, py %v", e.unit("other", "o1").Status, e.unit("py", "p1").Status)
	}
	mu.Lock()
	if len(seen) != 3 || !seen["greeting/g1"] {
		t.Errorf("task saw %v, want hello/h1, hello/h2, greeting/g1", seen)
	}
	mu.Unlock()

	info, err := e.q.Worker(e.ctx, "gw")
	if err != nil {
		t.Fatal(err)
	}
	if string(info.Mode) != "\x43RUN" {
		t.Errorf("mode %x, want 'RUN'", []byte(info.Mode))
	}
	env := dataMap(t, info.Data)
	for _, k := range []string{"pid", "hostname", "worker_id", "runtime", "tasks"} {
		if _, ok := env[k]; !ok {
			t.Errorf("heartbeat data lacks %q: %v", k, env)
		}
	}
	if got := info.Expires.Sub(info.LastHeard); got != 24*time.Hour {
		t.Errorf("registration lifetime %v, want the configured 24h", got)
	}
	if env[coordinate.ReleaseLeasesKey] != true {
		t.Errorf("heartbeat data %v does not ask for its leases to end with it", env)
	}
	e.q.mu.Lock()
	before := len(e.q.heartbeats)
	e.q.mu.Unlock()
	e.clock.Add(15 * time.Second)
	e.q.mu.Lock()
	after := len(e.q.heartbeats)
	e.q.mu.Unlock()
	if after != before+1 {
		t.Errorf("heartbeats: %d after one interval, want %d", after, before+1)
	}

	r.cancel()
	recv(t, "Run to return", r.done)
	if _, err := e.q.Worker(e.ctx, "gw"); !errors.Is(err, coordinate.ErrNoSuchWorker) {
		t.Errorf("after stop, worker record: %v, want unregistered", err)
	}
}

// The context is cancelled 30 s before the lease expires, not earlier;
// attempts still pending 15 s after expiry are failed by the library.
func TestCancelBeforeExpiryThenFail(t *testing.T) {
	e := newEnv(t)
	e.spec(map[string]any{"name": "slow", "runtime": "go"})
	e.add("slow", "u")
	ctxs := make(chan context.Context, 1)
	release := make(chan struct{})
	lateErr := make(chan error, 1)
	var calls atomic.Int32
	e.start(Config{Lease: 120 * time.Second, Tasks: map[string]Task{"slow": func(ctx context.Context, as []*Attempt) {
		if calls.Add(1) > 1 {
			finishAll(ctx, as) // the retry
			return
		}
		ctxs <- ctx
		<-release // ignores its context, like a runaway task
		lateErr <- as[0].Finish(context.Background(), nil)
	}}})
	ctx := recv(t, "task start", ctxs)
	e.clock.Add(89 * time.Second)
	if ctx.Err() != nil {
		t.Fatal("context cancelled before expiry-30s")
	}
	e.clock.Add(time.Second)
	if ctx.Err() == nil {
		t.Fatal("context not cancelled at expiry-30s")
	}
	e.clock.Add(44 * time.Second) // expiry + 14 s
	if ups := e.q.updatesSeen(); len(ups) != 0 {
		t.Fatalf("updates before expiry+15s: %+v", ups)
	}
	e.clock.Add(time.Second)
	ups := e.q.updatesSeen()
	if len(ups) != 1 || ups[0].status != coordinate.StatusFailed || !ups[0].at.Equal(t0.Add(135*time.Second)) {
		t.Fatalf("updates at expiry+15s: %+v, want one FAILED", ups)
	}
	// The backend had already expired the lease: the unit is retried.
	if !errors.Is(ups[0].err, coordinate.ErrLostLease) {
		t.Errorf("forced failure after expiry: %v, want lost lease", ups[0].err)
	}
	close(release)
	if err := recv(t, "late finish", lateErr); !errors.Is(err, ErrNotPending) {
		t.Errorf("task's late finish: %v, want ErrNotPending", err)
	}
	// Its slot free again, the worker leases the unit again and finishes it.
	waitFor(t, "the retry", func() bool { return e.count("slow", coordinate.StatusFinished) == 1 })
	if u := e.unit("slow", "u"); u.Attempts != 2 {
		t.Errorf("unit finished after %d attempts, want 2", u.Attempts)
	}
}

// A short lease is cancelled halfway and failed, for good, at its last
// quarter, with the reason in the data.
func TestShortLeaseFailedInLastQuarter(t *testing.T) {
	e := newEnv(t)
	e.spec(map[string]any{"name": "slow", "runtime": "go"})
	e.add("slow", "u")
	ctxs := make(chan context.Context, 1)
	release := make(chan struct{})
	defer close(release)
	e.start(Config{Lease: 40 * time.Second, Tasks: map[string]Task{"slow": func(ctx context.Context, as []*Attempt) {
		ctxs <- ctx
		<-release
	}}})
	ctx := recv(t, "task start", ctxs)
	e.clock.Add(19 * time.Second)
	if ctx.Err() != nil {
		t.Fatal("cancelled before half the lease")
	}
	e.clock.Add(time.Second)
	if ctx.Err() == nil {
		t.Fatal("not cancelled at half the lease")
	}
	e.clock.Add(9 * time.Second)
	if u := e.unit("slow", "u"); u.Status != coordinate.StatusPending {
		t.Fatalf("at 29 s: %v, want pending", u.Status)
	}
	e.clock.Add(time.Second)
	u := e.unit("slow", "u")
	if u.Status != coordinate.StatusFailed {
		t.Fatalf("at 30 s (last quarter of 40 s): %v, want failed", u.Status)
	}
	d := dataMap(t, u.Data)
	if d["k"] != "u" || !strings.Contains(d["traceback"].(string), "before its lease expired") {
		t.Errorf("failed data %v: want the original data and the reason", d)
	}
}

// A panic fails the batch's pending attempts with the panic, the stack and
// a traceback, keeping the unit's data; finished attempts stay finished.
func TestPanicFailsAttempts(t *testing.T) {
	e := newEnv(t)
	e.spec(map[string]any{"name": "bad", "runtime": "go"})
	e.add("bad", "a", "b")
	e.start(Config{MaxJobs: 2, Tasks: map[string]Task{"bad": func(ctx context.Context, as []*Attempt) {
		if err := as[0].Finish(ctx, nil); err != nil {
			t.Error(err)
		}
		panic("boom")
	}}})
	waitFor(t, "the panic handled", func() bool {
		return e.count("bad", coordinate.StatusFinished)+e.count("bad", coordinate.StatusFailed) == 2
	})
	if e.count("bad", coordinate.StatusFinished) != 1 {
		t.Fatalf("finished %d, want 1", e.count("bad", coordinate.StatusFinished))
	}
	u := e.unit("bad", "b")
	if u.Status != coordinate.StatusFailed {
		u = e.unit("bad", "a")
	}
	d := dataMap(t, u.Data)
	if d["panic"] != "boom" || !strings.Contains(d["stack"].(string), "worker_test.go") ||
		!strings.HasPrefix(d["traceback"].(string), "boom\n") || d["k"] != u.Key.Bytes {
		t.Errorf("failed unit data %v", d)
	}
}

// Renew extends the lease in the queue and moves the cancellation.
func TestRenewMovesDeadlines(t *testing.T) {
	e := newEnv(t)
	e.spec(map[string]any{"name": "long", "runtime": "go"})
	e.add("long", "u")
	ctxs := make(chan context.Context, 1)
	renew := make(chan struct{})
	renewed := make(chan error)
	release := make(chan struct{})
	e.start(Config{Lease: 120 * time.Second, Tasks: map[string]Task{"long": func(ctx context.Context, as []*Attempt) {
		ctxs <- ctx
		<-renew
		renewed <- as[0].Renew(ctx, 300*time.Second)
		<-release
		if err := as[0].Finish(context.Background(), nil); err != nil {
			t.Error(err)
		}
	}}})
	ctx := recv(t, "task start", ctxs)
	e.clock.Add(80 * time.Second)
	renew <- struct{}{}
	if err := recv(t, "renew", renewed); err != nil {
		t.Fatal(err)
	}
	if u := e.unit("long", "u"); !u.Expiration.Equal(t0.Add(380 * time.Second)) {
		t.Errorf("expiry after renew %v, want %v", u.Expiration, t0.Add(380*time.Second))
	}
	e.clock.Add(269 * time.Second) // 349 s: 1 s before the new expiry-30s
	if ctx.Err() != nil {
		t.Fatal("cancelled at the old deadline")
	}
	e.clock.Add(time.Second)
	if ctx.Err() == nil {
		t.Fatal("not cancelled at the new expiry-30s")
	}
	close(release)
	waitFor(t, "finish", func() bool { return e.count("long", coordinate.StatusFinished) == 1 })
	if ups := e.q.updatesSeen(); len(ups) != 2 {
		t.Errorf("updates %+v, want renew and finish only", ups)
	}
}

// No more than Concurrency tasks run at once.
func TestConcurrencyLimit(t *testing.T) {
	e := newEnv(t)
	e.spec(map[string]any{"name": "c", "runtime": "go"})
	e.add("c", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
	var now, peak atomic.Int32
	started := make(chan struct{}, 10)
	release := make(chan struct{})
	e.start(Config{Concurrency: 3, Tasks: map[string]Task{"c": func(ctx context.Context, as []*Attempt) {
		n := now.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		started <- struct{}{}
		<-release
		now.Add(-1)
		finishAll(ctx, as)
	}}})
	for range 3 {
		recv(t, "a task start", started)
	}
	e.q.mu.Lock()
	calls := e.q.getWork
	e.q.mu.Unlock()
	if calls != 3 {
		t.Errorf("%d get_work calls with 3 slots busy, want 3", calls)
	}
	close(release)
	waitFor(t, "all finished", func() bool { return e.count("c", coordinate.StatusFinished) == 10 })
	if p := peak.Load(); p != 3 {
		t.Errorf("peak concurrency %d, want 3", p)
	}
}

// A batch holds up to MaxJobs attempts, all of one spec.
func TestBatchesOfOneSpec(t *testing.T) {
	e := newEnv(t)
	e.spec(map[string]any{"name": "a", "runtime": "go", "task": "t"})
	e.spec(map[string]any{"name": "b", "runtime": "go", "task": "t"})
	e.add("a", "a1", "a2", "a3")
	e.add("b", "b1", "b2", "b3", "b4")
	var mu sync.Mutex
	var batches [][]string
	e.start(Config{MaxJobs: 3, Concurrency: 2, Tasks: map[string]Task{"t": func(ctx context.Context, as []*Attempt) {
		var keys []string
		for _, a := range as {
			keys = append(keys, a.Spec()+"/"+a.Key())
		}
		mu.Lock()
		batches = append(batches, keys)
		mu.Unlock()
		finishAll(ctx, as)
	}}})
	waitFor(t, "all finished", func() bool {
		return e.count("a", coordinate.StatusFinished) == 3 && e.count("b", coordinate.StatusFinished) == 4
	})
	mu.Lock()
	defer mu.Unlock()
	for _, keys := range batches {
		if len(keys) == 0 || len(keys) > 3 {
			t.Errorf("batch %v: want 1-3 attempts", keys)
		}
		for _, k := range keys {
			if k[0] != keys[0][0] {
				t.Errorf("batch %v mixes specs", keys)
			}
		}
	}
	if len(batches) > 4 {
		t.Errorf("%d batches for 7 units with max_jobs 3", len(batches))
	}
}

// Stopping: no more fetching, running tasks may finish until the stop
// timeout, then the rest are cancelled and their attempts given back.
func TestGracefulStop(t *testing.T) {
	e := newEnv(t)
	e.spec(map[string]any{"name": "quick", "runtime": "go"})
	e.spec(map[string]any{"name": "stuck", "runtime": "go"})
	e.add("quick", "q")
	e.add("stuck", "s")
	quickCtx := make(chan context.Context, 1)
	stuckCtx := make(chan context.Context, 1)
	finishQuick := make(chan struct{})
	quickDone := make(chan error, 1)
	r := e.start(Config{Concurrency: 2, StopTimeout: 60 * time.Second, Tasks: map[string]Task{
		"quick": func(ctx context.Context, as []*Attempt) {
			quickCtx <- ctx
			<-finishQuick
			quickDone <- as[0].Finish(ctx, nil)
		},
		"stuck": func(ctx context.Context, as []*Attempt) {
			stuckCtx <- ctx
			<-ctx.Done()
		},
	}})
	qctx := recv(t, "quick start", quickCtx)
	sctx := recv(t, "stuck start", stuckCtx)
	r.cancel()
	waitFor(t, "the stop to begin", func() bool { return e.logs.saw("stopping: waiting") })
	e.add("quick", "late")
	close(finishQuick)
	if err := recv(t, "quick finish", quickDone); err != nil {
		t.Fatalf("finishing during the stop: %v", err)
	}
	if qctx.Err() != nil && e.count("quick", coordinate.StatusFinished) != 1 {
		t.Error("quick task cancelled before it could finish")
	}
	e.clock.Add(59 * time.Second)
	if sctx.Err() != nil {
		t.Fatal("stuck task cancelled before the stop timeout")
	}
	e.clock.Add(time.Second)
	recv(t, "Run to return", r.done)
	if sctx.Err() == nil {
		t.Error("stuck task not cancelled at the stop timeout")
	}
	if u := e.unit("stuck", "s"); u.Status != coordinate.StatusAvailable || u.Attempts != 1 {
		t.Errorf("stuck unit after stop: %v, %d attempts; want given back", u.Status, u.Attempts)
	}
	if u := e.unit("quick", "late"); u.Status != coordinate.StatusAvailable || u.Attempts != 0 {
		t.Errorf("unit added during the stop: %v, %d attempts; want never leased", u.Status, u.Attempts)
	}
}
