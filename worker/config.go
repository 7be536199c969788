package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// Task runs a batch of attempts: distinct units of one work spec, all
// leased to this worker, at least one. It must set each attempt's fate
// (Finish, Fail, Retry); attempts it leaves pending are retried when
// their lease expires. It should return soon after ctx is done; ctx is
// cancelled 30 s before the earliest lease of the batch expires, when the
// worker gives up on stopping gracefully, and when the task returns.
type Task func(ctx context.Context, attempts []*Attempt)

// Config configures a Worker. Only Tasks is required.
type Config struct {
	// Tasks maps task names to their functions. A spec with `runtime:
	// go` runs the task named by its `task` key, else by its name.
	Tasks map[string]Task
	// Runtime is the spec runtime this worker runs (default "go").
	Runtime string
	// ID is the worker's id (default: 32 random hex digits); Parent the
	// id of a parent worker, if any.
	ID     string
	Parent string
	// Concurrency is how many tasks run at once (default 1).
	Concurrency int
	// MaxJobs is the most attempts one task gets (default 1).
	MaxJobs int
	// AvailableGB is sent with get_work for specs' min_gb (0: unknown).
	AvailableGB float64
	// Lease is the lease asked for with each batch (default 5 minutes,
	// at most coordinate.MaxLease, 24 h: coordinated grants a longer
	// request only 5 minutes, so a longer Lease is lowered to 24 h).
	Lease time.Duration
	// HeartbeatInterval is how often the worker re-registers (default
	// 15 s, as the Python worker); WorkerExpire how long a registration
	// lives without one (default 4 intervals).
	HeartbeatInterval time.Duration
	WorkerExpire      time.Duration
	// StopTimeout is how long a stopping worker lets running tasks
	// finish before giving their attempts back (default 30 s).
	StopTimeout time.Duration
	// IdleMin and IdleMax bound the idle back-off: after an empty
	// get_work the worker waits IdleMin, doubling up to IdleMax, each wait
	// jittered to between half and all of it (defaults 1 s and 30 s).
	IdleMin, IdleMax time.Duration
	// LongPoll is how long an idle get_work waits for work to arrive when
	// the Queue is a LongPoller (default 30 s, the most coordinated
	// honours; negative: never). A daemon that does not know the option
	// answers at once, and the idle back-off applies as without it.
	LongPoll time.Duration
	// KeepLeasesOnExit stops the worker from asking, in its heartbeat,
	// that the queue end its leases as soon as its registration lapses or
	// it unregisters (coordinate.ReleaseLeasesKey). By default a crashed
	// worker's units are retried within WorkerExpire, not after their
	// leases; daemons that do not know the key ignore it.
	KeepLeasesOnExit bool
	// NoSignals stops Run from handling SIGTERM itself.
	NoSignals bool
	// Clock defaults to coordinate.SystemClock; Logger to slog.Default().
	Clock  Clock
	Logger *slog.Logger
}

// withDefaults validates c and fills in its defaults.
func (c Config) withDefaults() (Config, error) {
	if len(c.Tasks) == 0 {
		return c, errors.New("worker: no tasks")
	}
	for name, t := range c.Tasks {
		if name == "" || t == nil {
			return c, fmt.Errorf("worker: task %q: empty name or nil function", name)
		}
	}
	if c.Runtime == "" {
		c.Runtime = "go"
	}
	if c.ID == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		c.ID = hex.EncodeToString(b[:])
	}
	c.Concurrency = max(c.Concurrency, 1)
	c.MaxJobs = max(c.MaxJobs, 1)
	if c.Lease <= 0 {
		c.Lease = coordinate.DefaultLease
	}
	// The queue turns a longer lease into 5 minutes
	// (coordinate.ClampGetWorkLease); the worker would believe the long
	// one and let the task run on after the lease lapsed.
	c.Lease = min(c.Lease, coordinate.MaxLease)
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 15 * time.Second
	}
	if c.WorkerExpire <= 0 {
		c.WorkerExpire = 4 * c.HeartbeatInterval
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = 30 * time.Second
	}
	if c.IdleMin <= 0 {
		c.IdleMin = time.Second
	}
	if c.IdleMax < c.IdleMin {
		c.IdleMax = max(c.IdleMin, 30*time.Second)
	}
	if c.LongPoll == 0 {
		c.LongPoll = 30 * time.Second
	}
	if c.Clock == nil {
		c.Clock = coordinate.SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
