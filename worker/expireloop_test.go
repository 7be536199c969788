package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// downQueue fails every update once down is set, at once, as an
// in-process PostgreSQL namespace does while its database refuses
// connections.
type downQueue struct {
	*recordingQueue
	down    atomic.Bool
	updates atomic.Int64
}

func (q *downQueue) UpdateAttempt(ctx context.Context, ref coordinate.AttemptRef, upd coordinate.WorkUnitUpdate) error {
	if q.down.Load() {
		q.updates.Add(1)
		return errors.New("connection refused")
	}
	return q.recordingQueue.UpdateAttempt(ctx, ref, upd)
}

// When the library's forced failure after expiry meets an error other
// than a lost lease, the attempt stays pending and the failure deadline,
// already past, was re-armed to fire at once: the worker tried to fail
// the attempt again in a tight loop, as fast as the queue answered, for
// as long as the task ran.
func TestExpireFailureDoesNotSpin(t *testing.T) {
	e := newEnv(t)
	q := &downQueue{recordingQueue: e.q}
	e.spec(map[string]any{"name": "slow", "runtime": "go"})
	e.add("slow", "u")
	started := make(chan struct{})
	release := make(chan struct{})
	w, err := New(q, Config{Lease: 120 * time.Second, Clock: e.clock, NoSignals: true, WorkerExpire: 24 * time.Hour,
		Tasks: map[string]Task{"slow": func(ctx context.Context, as []*Attempt) {
			close(started)
			<-release // a task that does not heed its context
		}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		close(release)
		cancel()
		<-done
	}()
	recv(t, "task start", started)
	q.down.Store(true)
	e.clock.Add(136 * time.Second) // past the failure deadline
	time.Sleep(200 * time.Millisecond)
	if n := q.updates.Load(); n > 5 {
		t.Errorf("%d attempts to fail the unit within 200 ms of the failure deadline", n)
	}
	q.down.Store(false)
}
