package journal

import (
	"context"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"
)

// openGathering opens a SyncGroup journal in a fresh directory whose
// flusher starts out expecting groups of expect waiters and waits up to
// patience for them (a long patience makes the tests independent of the
// machine's speed).
func openGathering(t *testing.T, expect int, patience time.Duration) *Journal {
	t.Helper()
	j, err := Open(testOptions(t.TempDir(), nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	j.gatherer.limit = patience
	j.gatherer.observe(expect, patience) // before Replay starts the flusher
	if err := j.Replay(func(io.Reader, SnapshotInfo) error { return nil }, func([]byte, uint32) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return j
}

// waitersGathered returns once n Wait calls sleep on the next round
// together (it fails the test if that does not happen within 20 s).
func waitersGathered(t *testing.T, j *Journal, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Microsecond) {
		j.mu.Lock()
		got := j.nextWaiters
		j.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d Wait calls sleep on the next round, want %d", got, n)
		}
	}
}

// After groups of three waiters, the flusher holds a round until three
// callers wait for it: the first two are not written on their own.
func TestGatherWaitsForExpectedWaiters(t *testing.T) {
	j := openGathering(t, 3, time.Hour)
	before := j.Stats()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := range 3 {
		if i == 2 {
			waitersGathered(t, j, 2)
		}
		wg.Go(func() { errs <- j.Wait(ctx, j.Append([]byte{byte(i)})) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Wait = %v", err)
		}
	}
	st := j.Stats()
	if groups, waiters := st.Flushes-before.Flushes, st.Waiters-before.Waiters; groups != 1 || waiters != 3 {
		t.Errorf("%d groups released %d waiters, want the 3 waiters in 1 group", groups, waiters)
	}
	if g, w := j.GroupCounts(); g != st.Flushes || w != st.Waiters {
		t.Errorf("GroupCounts = %d, %d; Stats has %d groups and %d waiters", g, w, st.Flushes, st.Waiters)
	}
}

// A lone client's groups release one waiter: its round is never held,
// however patient the flusher would be.
func TestGatherLoneWaiterGoesAtOnce(t *testing.T) {
	j := openGathering(t, 1, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 3 {
		if err := j.Wait(ctx, j.Append([]byte{byte(i)})); err != nil {
			t.Fatalf("Wait %d = %v (held for waiters that never come?)", i, err)
		}
	}
}

// When fewer callers come than expected, the round goes once the patience
// (about one sync) runs out, and Close never waits for the patience.
func TestGatherGivesUp(t *testing.T) {
	j := openGathering(t, 8, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range gatherHistory + 1 {
		if err := j.Wait(ctx, j.Append([]byte{byte(i)})); err != nil {
			t.Fatalf("Wait %d = %v", i, err)
		}
	}

	j = openGathering(t, 8, time.Hour)
	done := make(chan error, 1)
	go func() { done <- j.Wait(ctx, j.Append([]byte("last"))) }()
	waitersGathered(t, j, 1)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("Wait for a record appended before Close = %v, want nil (written by the last round)", err)
	}
}

// The expectation is the most waiters one of the last gatherHistory groups
// released, so it falls once a client has stopped.
func TestGatherExpectation(t *testing.T) {
	g := newGatherer()
	if g.expected() != 0 {
		t.Fatalf("expected() of a new gatherer = %d, want 0", g.expected())
	}
	for _, n := range []int{7, 1, 8, 1} {
		g.observe(n, 100*time.Microsecond)
	}
	if g.expected() != 8 {
		t.Errorf("expected() after groups 7, 1, 8, 1 = %d, want 8", g.expected())
	}
	for range gatherHistory {
		g.observe(3, 100*time.Microsecond)
	}
	if g.expected() != 3 {
		t.Errorf("expected() after %d groups of 3 = %d, want 3", gatherHistory, g.expected())
	}
	if p := g.patience(); p != 100*time.Microsecond {
		t.Errorf("patience = %v, want the 100µs the syncs took", p)
	}
	g.observe(3, time.Hour)
	if p := g.patience(); p != maxGather {
		t.Errorf("patience after an hour-long sync = %v, want the cap %v", p, maxGather)
	}
}

// While the flusher gathers, only the waiter that completes the expected
// count kicks it (so it wakes once per group, not once per waiter).
func TestGatherKicksOnce(t *testing.T) {
	j, err := Open(testOptions(t.TempDir(), nil)) // no flusher: the test plays it
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j.mu.Lock()
	j.last, j.gatherWant = 2, 2
	j.mu.Unlock()
	go j.Wait(ctx, 1)
	waitersGathered(t, j, 1)
	if len(j.kick) != 0 {
		t.Fatal("the first of two expected waiters kicked the gathering flusher")
	}
	go j.Wait(ctx, 2)
	waitersGathered(t, j, 2)
	for deadline := time.Now().Add(time.Minute); len(j.kick) == 0; runtime.Gosched() { // it kicks right after counting itself
		if time.Now().After(deadline) {
			t.Fatal("the second of two expected waiters did not kick the gathering flusher")
		}
	}
}

// Two waits in a row that run out pause the waiting for gatherHistory
// rounds, twice as many after each further one, up to maxBackoff: callers
// that do not come back together (workers with varying think times) are
// not held. One that runs out alone pauses nothing.
func TestGatherBacksOff(t *testing.T) {
	j := openGathering(t, 8, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range missedLimit {
		if err := j.Wait(ctx, j.Append([]byte{byte(i)})); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// The flusher has exited: its state can be read.
	if g := j.gatherer; g.backoff != gatherHistory || g.skip == 0 {
		t.Errorf("after %d waits that ran out: backoff %d, %d rounds to skip; want %d and some", missedLimit, g.backoff, g.skip, gatherHistory)
	}

	g := newGatherer()
	g.ranOut()
	if g.skip != 0 {
		t.Fatalf("one wait that ran out pauses %d rounds, want none", g.skip)
	}
	want := gatherHistory
	for range 8 {
		g.ranOut()
		if g.backoff != want || g.skip != want {
			t.Fatalf("backoff, skip = %d, %d; want %d, %d", g.backoff, g.skip, want, want)
		}
		want = min(2*want, maxBackoff)
	}
}

// The gathering's timer fires once armed, again after re-arming, and its
// close returns (its reader exits).
func TestGatherTimer(t *testing.T) {
	tm := newGatherTimer()
	for range 2 {
		tm.arm(50 * time.Microsecond)
		select {
		case <-tm.c:
		case <-time.After(time.Minute):
			t.Fatal("an armed gather timer did not fire")
		}
	}
	tm.arm(time.Hour)
	tm.disarm()
	tm.close()
}
