package coordinate

import (
	"context"
	"time"
)

// StatsReader is an optional Namespace interface for monitoring (the
// daemon's /metrics and dashboard). Stats must cost O(work specs), never
// a scan of work units: backends answer it from counts they already keep.
type StatsReader interface {
	Stats(ctx context.Context) (*NamespaceStats, error)
}

// GroupLister is an optional Namespace interface listing the units of a
// group, for drawing its dependency graph. It returns at most limit units
// (limit > 0) ordered by spec name then key, and whether more exist.
type GroupLister interface {
	GroupUnits(ctx context.Context, group string, limit int) (units []*WorkUnit, more bool, err error)
}

// WorkerUnitLister is an optional Namespace interface listing the units
// handed to one live worker that are not yet FINISHED or FAILED (what
// ChildWorkUnits reports for a parent's children), ordered by spec name
// then key; ErrNoSuchWorker when the worker is not live.
type WorkerUnitLister interface {
	WorkerUnits(ctx context.Context, worker string) ([]ChildWorkUnit, error)
}

// NamespaceStats is one namespace's monitoring snapshot.
type NamespaceStats struct {
	Specs []SpecStats // ordered by name
}

// SpecStats is one work spec's monitoring snapshot.
type SpecStats struct {
	Name       Name
	Counts     StatusCounts // as CountWorkUnits reports them, archived included
	Paused     bool
	Continuous bool
	// OldestAvailable is when the unit that has been AVAILABLE (and
	// runnable: not delayed) the longest became so; zero when there is
	// none, or when the backend does not track it.
	OldestAvailable time.Time
	// Events counts unit transitions in this spec since the backend was
	// opened; nil when the backend does not keep them.
	Events *SpecEvents
}

// StatusCounts holds a count per status, indexed by Status.
type StatusCounts [StatusFailed + 1]int

// Total is the sum over every status.
func (c StatusCounts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// SpecEvents counts unit transitions. A unit counts as Added when it is
// created (chained outputs included), Leased when it becomes PENDING,
// Finished and Failed when it enters those statuses, Retried when it leaves
// FAILED for AVAILABLE or BLOCKED, and Expired when its lease lapses
// (whether it becomes AVAILABLE again or FAILED for too many retries).
type SpecEvents struct {
	Added, Leased, Finished, Failed, Retried, Expired uint64
}

// Add adds o's counts to e.
func (e *SpecEvents) Add(o *SpecEvents) {
	e.Added += o.Added
	e.Leased += o.Leased
	e.Finished += o.Finished
	e.Failed += o.Failed
	e.Retried += o.Retried
	e.Expired += o.Expired
}

// Note counts one transition from old to status (old 0: a new unit).
// expiry says the transition is a lease lapsing.
func (e *SpecEvents) Note(old, status Status, expiry bool) {
	if old == status {
		return
	}
	switch {
	case old == 0:
		e.Added++
	case old == StatusFailed && (status == StatusAvailable || status == StatusBlocked):
		e.Retried++
	}
	switch status {
	case StatusPending:
		e.Leased++
	case StatusFinished:
		e.Finished++
	case StatusFailed:
		e.Failed++
	}
	if expiry && old == StatusPending {
		e.Expired++
	}
}
