package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// The adaptive processor of the durable default (docs/persistence.md,
// "Group commit, fourth pass: an adaptive processor").
//
// Under -sync group the journal's flusher spends most of its time in a
// synchronous write, and a goroutine in a system call keeps its processor
// (P) until the runtime's monitor takes it back: with GOMAXPROCS equal to
// the CPUs, the connection handlers a group woke then queue for the other
// P while a core is free. One P more lets them run, which pays while each
// group releases several waiters (many busy workers) and costs a lone
// client (likely: its idle processors spin up threads at every wake-up). So the
// daemon raises GOMAXPROCS by one while groups carry several waiters and
// restores the runtime's default when they carry about one. GOMAXPROCS is
// process-wide: this file is its only owner in the daemon.

// groupCounts are the journal's cumulative written groups and the Wait
// calls they released (journal.Stats.Flushes and Waiters).
type groupCounts struct{ groups, waiters uint64 }

// procsSetter changes the processor count; runtimeProcs is the real one.
// set and restore return the longest stop of the world the change caused
// (0 if not known).
type procsSetter interface {
	current() int            // the setting now
	set(n int) time.Duration // a custom setting (the runtime stops updating its default)
	restore() time.Duration  // the runtime's default again, with its automatic updates
}

// runtimeProcs sets the Go runtime's GOMAXPROCS. Since Go 1.25 the
// default follows the CPU count, affinity mask and cgroup quota, and the
// runtime updates it as they change until GOMAXPROCS(n) sets a custom
// value; SetDefaultGOMAXPROCS recomputes the default and re-enables the
// updates, so restoring never pins a value that was stale.
type runtimeProcs struct{}

func (runtimeProcs) current() int { return runtime.GOMAXPROCS(0) }

func (runtimeProcs) set(n int) time.Duration {
	return longestPause(func() { runtime.GOMAXPROCS(n) })
}

func (runtimeProcs) restore() time.Duration {
	return longestPause(runtime.SetDefaultGOMAXPROCS)
}

// pausesMetric is the runtime's distribution of the world stops that are
// not the garbage collector's (a GOMAXPROCS change is one).
const pausesMetric = "/sched/pauses/total/other:seconds"

// longestPause runs change and returns the upper bound of the histogram
// bucket of the longest world stop recorded meanwhile (a bucket spans at
// most a quarter of its lower bound). Another stop in the same moment (a
// profile, say) would be counted too.
func longestPause(change func()) time.Duration {
	before := readPauses()
	change()
	_, longest := newPauses(before, readPauses())
	return time.Duration(longest * float64(time.Second))
}

func readPauses() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: pausesMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// newPauses returns how many pauses after has beyond before and the
// upper bound, in seconds, of the longest one's bucket.
func newPauses(before, after *metrics.Float64Histogram) (n uint64, longest float64) {
	if before == nil || after == nil {
		return 0, 0
	}
	for i, c := range after.Counts {
		if d := c - before.Counts[i]; d > 0 {
			n += d
			longest = after.Buckets[i+1]
			if math.IsInf(longest, 1) {
				longest = after.Buckets[i]
			}
		}
	}
	return n, longest
}

// procsPolicy is when to raise and restore. A window is high when at least
// minGroups groups were written in it, releasing at least raiseAt waiters
// per group on average; low when fewer groups were written (an idle
// journal) or they released fewer than dropBelow; otherwise neither, and
// the counts of consecutive high and low windows start over.
type procsPolicy struct {
	window     time.Duration // how often the counts are read
	minGroups  uint64        // groups per window below which the journal counts as idle
	raiseAt    float64       // waiters per group that make a window high
	dropBelow  float64       // waiters per group below which a window is low
	raiseAfter int           // consecutive high windows before raising
	dropAfter  int           // consecutive low windows before restoring
}

// defaultProcsPolicy: since the flusher holds a round for the callers
// recent groups released (journal/gather.go; "Group commit, fifth pass"),
// a lone client's groups release 1.0 waiter, two clients' 2.0, eight
// clients' ≈ 7.5 (drain and chain measured; 1.1 and 3.7-4.4 before), and
// one client can never make a group of two. Raising at 3 keeps two
// clients at the default, as before, where the extra processor's worth
// was unclear (the fourth pass: 0.93x at 2 connections). Raising needs two high
// windows (0.2 s: a drain of 20 000 units lasts 1-3 s) and restoring ten
// low ones (1 s), so the setting changes at most about once a second in
// each direction, each change stopping the world briefly (measured in the
// section named above).
var defaultProcsPolicy = procsPolicy{
	window:     100 * time.Millisecond,
	minGroups:  40, // 400 groups/s; a lone client writes thousands
	raiseAt:    3,
	dropBelow:  1.5,
	raiseAfter: 2,
	dropAfter:  10,
}

// procsChange is one change the controller made, for its log line.
type procsChange struct {
	from, to        int
	restored        bool          // back to the runtime's default
	waitersPerGroup float64       // in the window that decided it
	pause           time.Duration // the longest stop of the world it caused
}

// procsController decides from successive group counts. It is used by one
// goroutine.
type procsController struct {
	policy    procsPolicy
	setter    procsSetter
	userSet   bool // GOMAXPROCS given in the environment: never change it
	raised    bool
	high, low int // consecutive high and low windows
	last      groupCounts
}

// newProcsController returns a controller starting from the counts start.
// getenv reads the environment: a GOMAXPROCS set there (any value) is the
// user's choice, and the controller then never changes the setting.
func newProcsController(policy procsPolicy, setter procsSetter, getenv func(string) string, start groupCounts) *procsController {
	return &procsController{policy: policy, setter: setter, userSet: getenv("GOMAXPROCS") != "", last: start}
}

// observe takes the counts at the end of a window and raises or restores
// the processor count when the policy says so.
func (c *procsController) observe(now groupCounts) (procsChange, bool) {
	groups, waiters := now.groups-c.last.groups, now.waiters-c.last.waiters
	c.last = now
	if c.userSet {
		return procsChange{}, false
	}
	perGroup := 0.0
	if groups > 0 {
		perGroup = float64(waiters) / float64(groups)
	}
	busy := groups >= c.policy.minGroups
	switch {
	case busy && perGroup >= c.policy.raiseAt:
		c.high, c.low = c.high+1, 0
	case !busy || perGroup < c.policy.dropBelow:
		c.high, c.low = 0, c.low+1
	default:
		c.high, c.low = 0, 0
	}
	switch {
	case !c.raised && c.high >= c.policy.raiseAfter:
		from := c.setter.current()
		pause := c.setter.set(from + 1)
		c.raised, c.high = true, 0
		return procsChange{from: from, to: from + 1, waitersPerGroup: perGroup, pause: pause}, true
	case c.raised && c.low >= c.policy.dropAfter:
		ch, _ := c.stop()
		ch.waitersPerGroup = perGroup
		c.low = 0
		return ch, true
	}
	return procsChange{}, false
}

// stop restores the runtime's default if the controller had raised it.
func (c *procsController) stop() (procsChange, bool) {
	if !c.raised {
		return procsChange{}, false
	}
	from := c.setter.current()
	pause := c.setter.restore()
	c.raised = false
	return procsChange{from: from, to: c.setter.current(), restored: true, pause: pause}, true
}

// journalGroups is a persistent memory backend's source of group counts
// (two atomic loads: the controller polls it every window).
type journalGroups interface {
	JournalGroups() (groups, waiters uint64)
}

// startAdaptiveProcs runs the controller for a persistent memory backend
// under -sync group until ctx ends, then restores the default; the
// returned channel is closed once it has. It does nothing (the channel
// is closed at once) when -adaptive-procs=false, for other backends and
// policies, and when GOMAXPROCS is set in the environment.
func startAdaptiveProcs(ctx context.Context, opts *options, backend coordinate.Backend, getenv func(string) string, log *slog.Logger) <-chan struct{} {
	done := make(chan struct{})
	src, ok := backend.(journalGroups)
	if !opts.adaptiveProcs || !ok || opts.volatile || opts.sync != journal.SyncGroup {
		close(done)
		return done
	}
	counts := func() groupCounts {
		groups, waiters := src.JournalGroups()
		return groupCounts{groups: groups, waiters: waiters}
	}
	c := newProcsController(defaultProcsPolicy, runtimeProcs{}, getenv, counts())
	if c.userSet {
		log.Info("GOMAXPROCS is set in the environment: the processor count stays as set", "gomaxprocs", runtime.GOMAXPROCS(0))
		close(done)
		return done
	}
	go func() {
		defer close(done)
		t := time.NewTicker(c.policy.window)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				if ch, ok := c.stop(); ok {
					logProcsChange(log, ch)
				}
				return
			case <-t.C:
				if ch, ok := c.observe(counts()); ok {
					logProcsChange(log, ch)
				}
			}
		}
	}()
	return done
}

func logProcsChange(log *slog.Logger, ch procsChange) {
	msg := "processors raised for group commit"
	if ch.restored {
		msg = "processors restored to the runtime's default"
	}
	log.Info(msg, "gomaxprocs", ch.to, "was", ch.from,
		"waiters_per_group", fmt.Sprintf("%.2f", ch.waitersPerGroup), "pause_max", ch.pause)
}
