package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// Worker runs Tasks for the units of a Queue. Create it with New and call
// Run once.
type Worker struct {
	q     Queue
	cfg   Config
	log   *slog.Logger
	tasks []string // sorted task names

	// baseCtx carries the values of Run's context but is never
	// cancelled: the library's own updates use it. taskCtx is the
	// parent of the tasks' contexts, cancelled when a stop gives up.
	baseCtx    context.Context
	taskCtx    context.Context
	cancelTask context.CancelFunc

	running sync.WaitGroup
	mu      sync.Mutex
	live    map[*batch]struct{}
	specs   map[string]specTask // spec name -> its task, cached
	hb      heartbeater

	quickPolls int // long polls answered at once, empty, since one waited (fetch loop only)
}

// specTask is a cached spec -> task lookup.
type specTask struct {
	task string
	at   time.Time
}

// quickPollsOff is how many long polls answered at once with no work, and
// none that waited in between, turn long-polling off for the run.
const quickPollsOff = 3

// specCacheTTL is how long a spec's task is trusted before it is read again.
const specCacheTTL = time.Minute

// New returns a Worker for q.
func New(q Queue, cfg Config) (*Worker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	w := &Worker{
		q: q, cfg: cfg,
		log:   cfg.Logger.With("worker", cfg.ID),
		tasks: slices.Sorted(maps.Keys(cfg.Tasks)),
		live:  make(map[*batch]struct{}),
		specs: make(map[string]specTask),
	}
	return w, nil
}

// ID is the worker's id.
func (w *Worker) ID() string { return w.cfg.ID }

// Run registers the worker, runs tasks until ctx is done (or SIGTERM
// arrives, unless Config.NoSignals), then stops gracefully and
// unregisters. It returns an error only when the first registration
// fails.
func (w *Worker) Run(ctx context.Context) error {
	if !w.cfg.NoSignals {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM)
		defer stop()
	}
	w.baseCtx = context.WithoutCancel(ctx)
	w.taskCtx, w.cancelTask = context.WithCancel(w.baseCtx)
	defer w.cancelTask()
	if err := w.hb.start(ctx, w); err != nil {
		return err
	}
	w.log.Info("worker started", "tasks", w.tasks, "concurrency", w.cfg.Concurrency)
	w.fetch(ctx)
	w.stop()
	w.hb.stopAndUnregister(w)
	w.log.Info("worker stopped")
	return nil
}

// fetch leases work and starts tasks until ctx is done.
func (w *Worker) fetch(ctx context.Context) {
	slots := make(chan struct{}, w.cfg.Concurrency)
	idle := backoff{min: w.cfg.IdleMin, max: w.cfg.IdleMax}
	req := coordinate.WorkRequest{
		Worker:      coordinate.Name{Bytes: w.cfg.ID, Text: true},
		LeaseTime:   w.cfg.Lease,
		MaxJobs:     w.cfg.MaxJobs,
		Runtimes:    []string{w.cfg.Runtime},
		Tasks:       w.tasks,
		AvailableGB: w.cfg.AvailableGB,
	}
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		started, waited, err := w.fetchOne(ctx, req, slots)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			w.log.Error("getting work", "err", err)
		}
		if !started {
			<-slots
			if waited && err == nil {
				idle.reset() // the long poll was the wait
			} else {
				w.sleep(ctx, idle.next())
			}
			continue
		}
		idle.reset()
	}
}

// fetchOne leases one batch and starts its task; started reports whether
// a task now holds the slot, waited whether a long poll found nothing
// after waiting at least half its time (so no idle wait is needed).
//
// A plain get_work is not cancelled by ctx: its lease would be lost with
// the answer; what it brings after ctx is done is given back. A long poll
// is cancelled (a stop must not wait 30 s); a lease lost that way ends
// with the worker's registration (Config.KeepLeasesOnExit). Once
// quickPollsOff long polls have come back empty at once with none that
// waited in between (a daemon that ignores `wait`), the worker polls
// plainly for the rest of the run.
func (w *Worker) fetchOne(ctx context.Context, req coordinate.WorkRequest, slots chan struct{}) (started, waited bool, err error) {
	var as []coordinate.Attempt
	if lp, ok := w.q.(LongPoller); ok && w.cfg.LongPoll > 0 && w.quickPolls < quickPollsOff {
		start := w.cfg.Clock.Now()
		as, err = lp.GetWorkWait(ctx, req, w.cfg.LongPoll)
		waited = w.cfg.Clock.Now().Sub(start) >= w.cfg.LongPoll/2
		if waited {
			w.quickPolls = 0
		} else if err == nil && len(as) == 0 {
			w.quickPolls++
		}
		if w.quickPolls == quickPollsOff {
			w.log.Info("the queue answers long polls at once; polling with the idle back-off")
		}
	} else {
		callCtx, cancel := context.WithTimeout(w.baseCtx, updateTimeout)
		as, err = w.q.GetWork(callCtx, req)
		cancel()
	}
	if err != nil || len(as) == 0 {
		return false, waited, err
	}
	if ctx.Err() != nil {
		w.newBatch(as, w.cfg.Clock.Now()).giveBack()
		return false, false, nil
	}
	b := w.newBatch(as, w.cfg.Clock.Now())
	task, err := w.taskFor(ctx, as[0].Spec.Bytes)
	if err != nil {
		b.giveBack()
		return false, false, err
	}
	w.mu.Lock()
	w.live[b] = struct{}{}
	w.mu.Unlock()
	w.running.Add(1)
	go func() {
		defer w.running.Done()
		defer func() { <-slots }()
		b.run(task)
		w.mu.Lock()
		delete(w.live, b)
		w.mu.Unlock()
	}()
	return true, false, nil
}

// taskFor returns the task of a spec (its `task`, else its name).
func (w *Worker) taskFor(ctx context.Context, spec string) (Task, error) {
	now := w.cfg.Clock.Now()
	w.mu.Lock()
	c, ok := w.specs[spec]
	w.mu.Unlock()
	if !ok || now.Sub(c.at) > specCacheTTL {
		ws, err := w.q.WorkSpec(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("work spec %q: %w", spec, err)
		}
		c = specTask{task: ws.Meta.Task, at: now}
		if ws.Meta.Runtime != w.cfg.Runtime {
			c.task = "" // the queue ignored our runtime: not ours to run
		}
		w.mu.Lock()
		w.specs[spec] = c
		w.mu.Unlock()
	}
	if t := w.cfg.Tasks[c.task]; t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("work spec %q (task %q): %w", spec, c.task, errNoTask)
}

var errNoTask = errors.New("this worker has no such task; does the daemon honour `runtime`?")

// sleep waits d on the worker's clock, or until ctx is done.
func (w *Worker) sleep(ctx context.Context, d time.Duration) {
	done := make(chan struct{})
	stop := w.cfg.Clock.AfterFunc(d, func() { close(done) })
	defer stop()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// stop waits up to StopTimeout for running tasks, then gives the attempts
// of those still running back.
func (w *Worker) stop() {
	done := make(chan struct{})
	go func() {
		w.running.Wait()
		close(done)
	}()
	timeout := make(chan struct{})
	cancelTimeout := w.cfg.Clock.AfterFunc(w.cfg.StopTimeout, func() { close(timeout) })
	defer cancelTimeout()
	w.mu.Lock()
	n := len(w.live)
	w.mu.Unlock()
	if n > 0 {
		w.log.Info("stopping: waiting for running tasks", "tasks", n, "timeout", w.cfg.StopTimeout)
	}
	select {
	case <-done:
		return
	case <-timeout:
	}
	w.mu.Lock()
	live := slices.Collect(maps.Keys(w.live))
	w.mu.Unlock()
	w.log.Warn("stopping: tasks still running after the stop timeout; giving their attempts back", "tasks", len(live))
	w.cancelTask()
	for _, b := range live {
		b.giveBack()
	}
}
