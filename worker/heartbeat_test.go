package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// hbQueue blocks heartbeats after the first until released (or their
// context ends) and records the order of heartbeats and unregistering.
type hbQueue struct {
	*recordingQueue
	release chan struct{}
	blocked chan struct{}

	mu     sync.Mutex
	events []string
	n      int
}

func (q *hbQueue) WorkerHeartbeat(ctx context.Context, hb coordinate.Heartbeat) error {
	q.mu.Lock()
	q.n++
	first := q.n == 1
	q.mu.Unlock()
	if !first {
		q.blocked <- struct{}{}
		select {
		case <-q.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err := q.recordingQueue.WorkerHeartbeat(ctx, hb)
	q.mu.Lock()
	q.events = append(q.events, "heartbeat")
	q.mu.Unlock()
	return err
}

func (q *hbQueue) UnregisterWorker(ctx context.Context, id string) error {
	q.mu.Lock()
	q.events = append(q.events, "unregister")
	q.mu.Unlock()
	return q.recordingQueue.UnregisterWorker(ctx, id)
}

// A heartbeat in flight when the worker stops must not land after the
// worker unregistered: that registered the stopped worker again (listed
// by `coordinate workers` until it expired), and the heartbeat's
// goroutine outlived Run, its call reopening a Remote the caller had
// closed.
func TestNoHeartbeatAfterUnregister(t *testing.T) {
	e := newEnv(t)
	q := &hbQueue{recordingQueue: e.q, release: make(chan struct{}), blocked: make(chan struct{}, 1)}
	w, err := New(q, Config{NoSignals: true, Clock: e.clock, HeartbeatInterval: time.Second,
		LongPoll: -1, IdleMin: time.Hour, Tasks: map[string]Task{"t": finishAll}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	waitFor(t, "registration", func() bool { q.mu.Lock(); defer q.mu.Unlock(); return len(q.events) == 1 })
	// FakeClock runs the heartbeat in Add's goroutine: move it elsewhere.
	go e.clock.Add(time.Second)
	recv(t, "the second heartbeat", q.blocked)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		// Run may wait for the heartbeat; a fixed worker cancels it.
		t.Fatal("Run did not return while a heartbeat was in flight")
	}
	close(q.release)
	time.Sleep(50 * time.Millisecond)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.events[len(q.events)-1] != "unregister" {
		t.Errorf("events %v: a heartbeat landed after unregistering", q.events)
	}
}
