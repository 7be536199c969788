package worker

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/memory"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// update is one UpdateAttempt a recordingQueue saw.
type update struct {
	unit   string
	status coordinate.Status
	at     time.Time
	err    error
}

// recordingQueue is a memory namespace that records the worker's calls.
type recordingQueue struct {
	coordinate.Namespace
	clock *coordinate.FakeClock

	mu         sync.Mutex
	updates    []update
	heartbeats []coordinate.Heartbeat
	getWork    int
}

func (q *recordingQueue) GetWork(ctx context.Context, req coordinate.WorkRequest) ([]coordinate.Attempt, error) {
	q.mu.Lock()
	q.getWork++
	q.mu.Unlock()
	return q.Namespace.GetWork(ctx, req)
}

func (q *recordingQueue) UpdateAttempt(ctx context.Context, ref coordinate.AttemptRef, upd coordinate.WorkUnitUpdate) error {
	err := q.Namespace.UpdateAttempt(ctx, ref, upd)
	q.mu.Lock()
	q.updates = append(q.updates, update{unit: ref.Spec + "/" + ref.Key, status: upd.Status, at: q.clock.Now(), err: err})
	q.mu.Unlock()
	return err
}

func (q *recordingQueue) WorkerHeartbeat(ctx context.Context, hb coordinate.Heartbeat) error {
	q.mu.Lock()
	q.heartbeats = append(q.heartbeats, hb)
	q.mu.Unlock()
	return q.Namespace.WorkerHeartbeat(ctx, hb)
}

func (q *recordingQueue) updatesSeen() []update {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.updates)
}

// env is a memory backend on a fake clock with a worker over it.
type env struct {
	t     *testing.T
	ctx   context.Context
	clock *coordinate.FakeClock
	q     *recordingQueue
	logs  *logRecorder
}

func newEnv(t *testing.T) *env {
	clock := coordinate.NewFakeClock(t0)
	be := memory.New(memory.Options{Clock: clock})
	t.Cleanup(func() { be.Close() })
	ns, err := be.Namespace(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: t.Context(), clock: clock, q: &recordingQueue{Namespace: ns, clock: clock}, logs: &logRecorder{}}
}

func (e *env) spec(def map[string]any) {
	e.t.Helper()
	b, err := cbor.Marshal(def)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.q.SetWorkSpec(e.ctx, b); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) add(spec string, keys ...string) {
	e.t.Helper()
	units := make([]coordinate.WorkUnitInput, len(keys))
	for i, k := range keys {
		units[i] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: k, Text: true}, Data: mustCBOR(e.t, map[string]any{"k": k})}
	}
	if err := e.q.AddWorkUnits(e.ctx, spec, units); err != nil {
		e.t.Fatal(err)
	}
}

func mustCBOR(t *testing.T, v any) coordinate.Data {
	b, err := cbor.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *env) unit(spec, key string) *coordinate.WorkUnit {
	e.t.Helper()
	us, err := e.q.GetWorkUnits(e.ctx, spec, []string{key})
	if err != nil || us[0] == nil {
		e.t.Fatalf("unit %s/%s: %v", spec, key, err)
	}
	return us[0]
}

func (e *env) count(spec string, st coordinate.Status) int {
	e.t.Helper()
	c, err := e.q.CountWorkUnits(e.ctx, spec)
	if err != nil {
		e.t.Fatal(err)
	}
	return c[st]
}

// running is a started worker.
type running struct {
	w      *Worker
	cancel context.CancelFunc
	done   chan error // closed when Run returned
	err    error
}

// start runs a worker with cfg (on the env's clock, without signals).
func (e *env) start(cfg Config) *running {
	e.t.Helper()
	cfg.Clock = e.clock
	cfg.NoSignals = true
	if cfg.WorkerExpire == 0 {
		// The tests jump the clock by minutes; heartbeats cannot keep
		// up with a jump, and a lapsed registration ends the leases.
		cfg.WorkerExpire = 24 * time.Hour
	}
	cfg.Logger = slog.New(e.logs)
	w, err := New(e.q, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	r := &running{w: w, cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.err = w.Run(ctx)
		close(r.done)
	}()
	e.t.Cleanup(func() {
		cancel()
		for {
			select {
			case <-r.done:
				return
			case <-time.After(time.Millisecond):
				e.clock.Add(time.Minute) // past any stop timeout
			}
		}
	})
	return r
}

// waitFor polls cond (real time) until it holds; the failure timeout is
// generous because the machine may be loaded.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// recv receives from ch or fails the test.
func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// logRecorder is a slog handler keeping the messages.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		msg += " " + a.String()
		return true
	})
	l.msgs = append(l.msgs, msg)
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

func (l *logRecorder) saw(prefix string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.msgs, func(m string) bool { return strings.HasPrefix(m, prefix) })
}

// dataMap decodes unit data.
func dataMap(t *testing.T, d coordinate.Data) map[string]any {
	t.Helper()
	var m map[string]any
	dm, _ := cbor.DecOptions{ByteStringToString: cbor.ByteStringToStringAllowed}.DecMode()
	if err := dm.Unmarshal(d, &m); err != nil {
		t.Fatalf("unit data %x: %v", []byte(d), err)
	}
	return m
}
