package worker

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// modeRun is the worker mode the Python worker reports: 'RUN', a byte
// string as Python 2 sends it.
var modeRun = coordinate.Data{0x43, 'R', 'U', 'N'}

// heartbeater registers the worker every HeartbeatInterval.
type heartbeater struct {
	mu       sync.Mutex
	stopped  bool
	stopFn   func() bool
	cancel   context.CancelFunc // of the heartbeat in flight, if any
	inflight sync.WaitGroup
	data     coordinate.Data
}

// environment is the heartbeat data, shaped like the Python worker's
// (worker_id, parent, hostname, fqdn, pid, version) plus the runtime, the
// tasks and the request to end its leases with its registration. Keys and
// strings are byte strings, as Python 2 sends them.
func (w *Worker) environment() (coordinate.Data, error) {
	host, _ := os.Hostname()
	var parent any
	if w.cfg.Parent != "" {
		parent = []byte(w.cfg.Parent)
	}
	tasks := make([]any, len(w.tasks))
	for i, t := range w.tasks {
		tasks[i] = []byte(t)
	}
	env := map[cbor.ByteString]any{
		"worker_id":   []byte(w.cfg.ID),
		"parent":      parent,
		"hostname":    []byte(host),
		"fqdn":        []byte(host),
		"pid":         os.Getpid(),
		"version":     []byte("coordinated worker (Go)"),
		"runtime":     []byte(w.cfg.Runtime),
		"tasks":       tasks,
		"concurrency": w.cfg.Concurrency,
	}
	if !w.cfg.KeepLeasesOnExit {
		env[coordinate.ReleaseLeasesKey] = true
	}
	return cbor.Marshal(env)
}

func (w *Worker) heartbeat(ctx context.Context) error {
	hb := coordinate.Heartbeat{
		Worker: coordinate.Name{Bytes: w.cfg.ID, Text: true},
		Mode:   modeRun,
		Data:   w.hb.data,
		Expire: w.cfg.WorkerExpire,
	}
	if w.cfg.Parent != "" {
		hb.Parent = &coordinate.Name{Bytes: w.cfg.Parent, Text: true}
	}
	return w.q.WorkerHeartbeat(ctx, hb)
}

// start registers the worker and schedules the heartbeats.
func (h *heartbeater) start(ctx context.Context, w *Worker) error {
	data, err := w.environment()
	if err != nil {
		return fmt.Errorf("worker %s: heartbeat data: %w", w.cfg.ID, err)
	}
	h.data = data
	if err := w.heartbeat(ctx); err != nil {
		return fmt.Errorf("worker %s: registering: %w", w.cfg.ID, err)
	}
	h.schedule(w)
	return nil
}

func (h *heartbeater) schedule(w *Worker) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	h.stopFn = w.cfg.Clock.AfterFunc(w.cfg.HeartbeatInterval, func() {
		h.mu.Lock()
		if h.stopped {
			h.mu.Unlock()
			return
		}
		ctx, cancel := context.WithTimeout(w.baseCtx, updateTimeout)
		h.cancel = cancel
		h.inflight.Add(1)
		h.mu.Unlock()
		err := w.heartbeat(ctx)
		h.mu.Lock()
		h.cancel = nil
		h.mu.Unlock()
		cancel()
		h.inflight.Done()
		if err != nil {
			w.log.Warn("heartbeat", "err", err)
		}
		h.schedule(w)
	})
}

// stopAndUnregister ends the heartbeats and removes the registration. A
// heartbeat in flight is cancelled and waited for: landing after the
// unregistration, it would register the stopped worker again (and its
// call could outlive Run).
func (h *heartbeater) stopAndUnregister(w *Worker) {
	h.mu.Lock()
	h.stopped = true
	if h.stopFn != nil {
		h.stopFn()
	}
	if h.cancel != nil {
		h.cancel()
	}
	h.mu.Unlock()
	h.inflight.Wait()
	ctx, cancel := context.WithTimeout(w.baseCtx, updateTimeout)
	defer cancel()
	if err := w.q.UnregisterWorker(ctx, w.cfg.ID); err != nil {
		w.log.Warn("unregistering", "err", err)
	}
}
