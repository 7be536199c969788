package worker

import (
	"context"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// Queue is what a Worker needs from a job queue. A coordinate.Namespace is
// one; Remote adapts a daemon connection.
type Queue interface {
	// GetWork leases units; the Worker sets Runtimes and Tasks.
	GetWork(ctx context.Context, req coordinate.WorkRequest) ([]coordinate.Attempt, error)
	// UpdateAttempt updates a unit under its lease, failing with
	// coordinate.ErrLostLease when the lease is no longer current.
	UpdateAttempt(ctx context.Context, ref coordinate.AttemptRef, update coordinate.WorkUnitUpdate) error
	// WorkSpec returns a spec; the Worker reads Meta.Task.
	WorkSpec(ctx context.Context, name string) (*coordinate.WorkSpec, error)
	// WorkerHeartbeat registers or refreshes the worker.
	WorkerHeartbeat(ctx context.Context, hb coordinate.Heartbeat) error
	// UnregisterWorker removes the worker's registration.
	UnregisterWorker(ctx context.Context, id string) error
}

// LongPoller is a Queue whose get_work can wait for work to arrive instead
// of answering "none" at once (Remote: the get_work `wait` option).
type LongPoller interface {
	GetWorkWait(ctx context.Context, req coordinate.WorkRequest, wait time.Duration) ([]coordinate.Attempt, error)
}

// Clock is the time source of a Worker: coordinate.SystemClock, or a
// coordinate.FakeClock in tests (shared with an in-process backend).
type Clock interface {
	coordinate.Clock
	// AfterFunc runs f once d has passed and returns a function that
	// cancels it.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

var (
	_ Queue      = coordinate.Namespace(nil)
	_ LongPoller = (*Remote)(nil)
	_ Clock      = coordinate.SystemClock{}
	_ Clock      = (*coordinate.FakeClock)(nil)
)
