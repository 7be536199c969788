package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// fakeProcs stands for the runtime's GOMAXPROCS: def is the runtime's
// default, n the setting, calls what the controller asked for.
type fakeProcs struct {
	def, n int
	calls  []string
}

func (f *fakeProcs) current() int { return f.n }
func (f *fakeProcs) set(n int) time.Duration {
	f.n = n
	f.calls = append(f.calls, "set")
	return 0
}
func (f *fakeProcs) restore() time.Duration {
	f.n = f.def
	f.calls = append(f.calls, "restore")
	return 0
}

// fakeJournal feeds the controller windows of a given size.
type fakeJournal struct {
	c    *procsController
	now  groupCounts
	seen []procsChange
}

// window adds groups releasing waiters in total and hands the counts to
// the controller.
func (j *fakeJournal) window(groups, waiters uint64) {
	j.now.groups += groups
	j.now.waiters += waiters
	if ch, ok := j.c.observe(j.now); ok {
		j.seen = append(j.seen, ch)
	}
}

// win is one window: groups releasing waiters in total.
type win struct{ groups, waiters uint64 }

// repeat feeds the windows of pattern, in order, times times.
func (j *fakeJournal) repeat(times int, pattern ...win) {
	for range times {
		for _, w := range pattern {
			j.window(w.groups, w.waiters)
		}
	}
}

// expect fails t unless GOMAXPROCS is n after the controller made calls
// calls (with none, n can only be the default: only set and restore
// change it).
func (p *fakeProcs) expect(t *testing.T, n, calls int, after string) {
	t.Helper()
	if p.n != n || len(p.calls) != calls {
		t.Fatalf("%s: GOMAXPROCS %d, calls %v; want %d after %d calls", after, p.n, p.calls, n, calls)
	}
}

func testProcsPolicy() procsPolicy {
	return procsPolicy{minGroups: 100, raiseAt: 2, dropBelow: 1.5, raiseAfter: 2, dropAfter: 4}
}

func noEnv(string) string { return "" }

func newFakeController(getenv func(string) string) (*fakeProcs, *fakeJournal) {
	p := &fakeProcs{def: 2, n: 2}
	start := groupCounts{groups: 1000, waiters: 900} // counts since Open are not a window
	return p, &fakeJournal{c: newProcsController(testProcsPolicy(), p, getenv, start), now: start}
}

// Groups that each release several waiters raise the count by one after
// raiseAfter windows; groups of about one waiter restore the default
// after dropAfter windows.
func TestProcsRiseAndFall(t *testing.T) {
	p, j := newFakeController(noEnv)
	j.window(500, 2000) // 4 waiters per group
	if p.n != 2 || len(p.calls) != 0 {
		t.Fatalf("after one high window: GOMAXPROCS %d, calls %v; want 2 and none (raiseAfter is 2)", p.n, p.calls)
	}
	j.window(500, 1900)
	if p.n != 3 || len(j.seen) != 1 || j.seen[0].from != 2 || j.seen[0].to != 3 || j.seen[0].restored {
		t.Fatalf("after two high windows: GOMAXPROCS %d, changes %+v; want one raise 2 -> 3", p.n, j.seen)
	}
	for range 5 {
		j.window(500, 2000)
	}
	if p.n != 3 || len(p.calls) != 1 {
		t.Fatalf("high windows while raised: GOMAXPROCS %d, calls %v; want 3 and the one raise", p.n, p.calls)
	}
	for i := range 3 {
		j.window(3000, 3000) // a lone client: one waiter per group
		if p.n != 3 {
			t.Fatalf("after %d low windows: GOMAXPROCS %d, want still 3 (dropAfter is 4)", i+1, p.n)
		}
	}
	j.window(3000, 3100)
	if p.n != 2 || len(j.seen) != 2 || !j.seen[1].restored || j.seen[1].to != 2 {
		t.Fatalf("after four low windows: GOMAXPROCS %d, changes %+v; want the default 2 restored", p.n, j.seen)
	}
	if want := []string{"set", "restore"}; len(p.calls) != 2 || p.calls[0] != want[0] || p.calls[1] != want[1] {
		t.Errorf("calls %v, want %v", p.calls, want)
	}
}

// Between the thresholds nothing changes in either direction, and windows
// that alternate never add up to a change: the counts of consecutive
// windows start over.
func TestProcsHysteresis(t *testing.T) {
	p, j := newFakeController(noEnv)
	j.repeat(10, win{500, 850}) // 1.7 waiters per group: neither high nor low
	p.expect(t, 2, 0, "between the thresholds from the default")
	j.repeat(10, win{500, 2000}, win{500, 500})
	j.repeat(10, win{500, 2000}, win{500, 850})
	p.expect(t, 2, 0, "high windows alternating with low or in-between ones")

	j.repeat(2, win{500, 2000})
	if p.n != 3 {
		t.Fatalf("two high windows: GOMAXPROCS %d, want 3", p.n)
	}
	j.repeat(10, win{500, 850})
	j.repeat(10, win{500, 500}, win{500, 500}, win{500, 500}, win{500, 2000})
	p.expect(t, 3, 1, "raised, then windows between the thresholds and fewer than four low ones in a row")
}

// An idle journal (fewer than minGroups groups per window) counts as low:
// it never raises the count, however many waiters its few groups carry,
// and a raised count goes back to the default.
func TestProcsIdle(t *testing.T) {
	p, j := newFakeController(noEnv)
	j.repeat(10, win{50, 400})
	p.expect(t, 2, 0, "idle windows of 8 waiters per group")
	j.repeat(2, win{500, 2000})
	j.repeat(2, win{50, 400}, win{0, 0})
	p.expect(t, 2, 2, "raised, then four idle windows (the busiest at 8 waiters per group)")
}

// stop restores the default if the controller raised the count, and does
// nothing otherwise.
func TestProcsStop(t *testing.T) {
	p, j := newFakeController(noEnv)
	if _, ok := j.c.stop(); ok || len(p.calls) != 0 {
		t.Fatalf("stop without a raise: calls %v, want none", p.calls)
	}
	j.window(500, 2000)
	j.window(500, 2000)
	if ch, ok := j.c.stop(); !ok || !ch.restored || p.n != 2 {
		t.Fatalf("stop after a raise: change %+v, GOMAXPROCS %d; want the default 2 restored", ch, p.n)
	}
}

// A GOMAXPROCS in the environment is the user's: nothing is ever changed.
func TestProcsRespectEnvironment(t *testing.T) {
	env := func(k string) string {
		if k == "GOMAXPROCS" {
			return "4"
		}
		return ""
	}
	p, j := newFakeController(env)
	for range 10 {
		j.window(500, 4000)
	}
	if _, ok := j.c.stop(); ok || len(p.calls) != 0 || p.n != 2 {
		t.Fatalf("GOMAXPROCS=4 in the environment: calls %v, GOMAXPROCS %d; want none and 2", p.calls, p.n)
	}
}

// journalStub is a backend with journal counts and nothing else.
type journalStub struct{ coordinate.Backend }

func (journalStub) JournalGroups() (groups, waiters uint64) { return 0, 0 }

// The controller runs only for the durable memory backend under -sync
// group, without -adaptive-procs=false and without GOMAXPROCS in the
// environment; otherwise startAdaptiveProcs returns finished.
func TestAdaptiveProcsOnlyWhereItApplies(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	group := func() *options {
		return &options{adaptiveProcs: true, storage: storage{sync: journal.SyncGroup, dataDir: t.TempDir()}}
	}
	withEnv := func(k string) string {
		if k == "GOMAXPROCS" {
			return "2"
		}
		return ""
	}
	off, none, volatile := group(), group(), group()
	off.adaptiveProcs = false
	none.sync = journal.SyncNone
	volatile.volatile, volatile.dataDir = true, ""
	for _, tc := range []struct {
		name    string
		opts    *options
		backend coordinate.Backend
		getenv  func(string) string
		runs    bool
	}{
		{"group", group(), journalStub{}, noEnv, true},
		{"-adaptive-procs=false", off, journalStub{}, noEnv, false},
		{"-sync none", none, journalStub{}, noEnv, false},
		{"volatile", volatile, journalStub{}, noEnv, false},
		{"no journal (postgres)", group(), struct{ coordinate.Backend }{}, noEnv, false},
		{"GOMAXPROCS in the environment", group(), journalStub{}, withEnv, false},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := startAdaptiveProcs(ctx, tc.opts, tc.backend, tc.getenv, log)
		finished := false
		select {
		case <-done:
			finished = true
		default:
		}
		cancel()
		<-done
		if finished == tc.runs {
			t.Errorf("%s: controller running = %v, want %v", tc.name, !finished, tc.runs)
		}
	}
}

// BenchmarkProcsChange measures what one change of the processor count
// costs the whole process: the runtime stops the world to resize. Busy
// goroutines (half of them in short system calls, as connection handlers
// and the journal's flusher are) keep every processor occupied; the world
// stops are read from runtime/metrics and reported as their mean and
// maximum (bucket upper bounds). The gc case measures a collection's stops
// (two per cycle) the same way, for scale.
func BenchmarkProcsChange(b *testing.B) {
	if os.Getenv("GOMAXPROCS") != "" {
		b.Skip("GOMAXPROCS is set in the environment; the benchmark changes it")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 2 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			x := 0
			for ctx.Err() == nil {
				if i%2 == 0 {
					syscall.Getpid()
				}
				for k := range 1000 {
					x += k
				}
			}
			_ = x
		})
	}
	defer func() { cancel(); wg.Wait() }()
	p := runtimeProcs{}
	base := p.current()
	b.Run("gomaxprocs", func(b *testing.B) {
		defer runtime.SetDefaultGOMAXPROCS()
		measurePauses(b, pausesMetric, func(i int) {
			if i%2 == 0 {
				p.set(base + 1)
			} else {
				p.restore()
			}
		})
	})
	b.Run("gc", func(b *testing.B) {
		measurePauses(b, "/sched/pauses/total/gc:seconds", func(int) { runtime.GC() })
	})
}

// measurePauses runs op b.N times and reports the world stops recorded in
// the runtime/metrics histogram name meanwhile.
func measurePauses(b *testing.B, name string, op func(i int)) {
	read := func() *metrics.Float64Histogram {
		s := []metrics.Sample{{Name: name}}
		metrics.Read(s)
		return s[0].Value.Float64Histogram()
	}
	before := read()
	b.ResetTimer()
	for i := range b.N {
		op(i)
	}
	b.StopTimer()
	after := read()
	n, longest := newPauses(before, after)
	var sum float64
	for i, c := range after.Counts {
		sum += float64(c-before.Counts[i]) * min(after.Buckets[i+1], 1)
	}
	if n > 0 {
		b.ReportMetric(sum/float64(n)*1e6, "µs/pause")
		b.ReportMetric(longest*1e6, "max-µs/pause")
		b.ReportMetric(float64(n)/float64(b.N), "pauses/op")
	}
}
