package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeReads is a read function whose calls block until released; each
// call's result names the call (its available count is the call number).
type fakeReads struct {
	calls   atomic.Int64
	started chan int64
	release map[int64]chan struct{}
	mu      sync.Mutex
}

func newFakeReads() *fakeReads {
	return &fakeReads{started: make(chan int64, 16), release: map[int64]chan struct{}{}}
}

func (f *fakeReads) gate(n int64) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.release[n] == nil {
		f.release[n] = make(chan struct{})
	}
	return f.release[n]
}

func (f *fakeReads) read(ctx context.Context) ([]candidate, error) {
	n := f.calls.Add(1)
	f.started <- n
	select {
	case <-f.gate(n):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return []candidate{{available: n}}, nil
}

// nextCallers is how many calls wait for the next read of key.
func (sr *schedReads) nextCallers(key string) int {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if q := sr.byKey[key]; q != nil && q.next != nil {
		return q.next.callers
	}
	return 0
}

type readResult struct {
	read   int64
	shared bool
	err    error
}

func doAsync(ctx context.Context, sr *schedReads, f *fakeReads) chan readResult {
	ch := make(chan readResult, 1)
	go func() {
		cands, shared, err := sr.do(ctx, "k", f.read)
		var n int64
		if len(cands) == 1 {
			n = cands[0].available
		}
		ch <- readResult{n, shared, err}
	}()
	return ch
}

// TestSchedReadsShareOnlyLaterReads: calls that arrive while a read runs
// do not get its result; they share the next read, which starts when the
// running one ends.
func TestSchedReadsShareOnlyLaterReads(t *testing.T) {
	var sr schedReads
	f := newFakeReads()
	ctx := t.Context()
	a := doAsync(ctx, &sr, f)
	if n := <-f.started; n != 1 {
		t.Fatalf("first read is call %d", n)
	}
	b, c := doAsync(ctx, &sr, f), doAsync(ctx, &sr, f)
	waitFor(t, "two calls waiting for the next read", func() bool { return sr.nextCallers("k") == 2 })
	close(f.gate(1))
	if r := <-a; r.err != nil || r.read != 1 || r.shared {
		t.Errorf("first call got read %d (shared %v), %v; want read 1 alone", r.read, r.shared, r.err)
	}
	if n := <-f.started; n != 2 {
		t.Fatalf("second read is call %d", n)
	}
	close(f.gate(2))
	for _, ch := range []chan readResult{b, c} {
		if r := <-ch; r.err != nil || r.read != 2 || !r.shared {
			t.Errorf("a later call got read %d (shared %v), %v; want read 2, shared", r.read, r.shared, r.err)
		}
	}
	if n := f.calls.Load(); n != 2 {
		t.Errorf("%d reads for 3 calls, want 2", n)
	}
	sr.mu.Lock()
	left := len(sr.byKey)
	sr.mu.Unlock()
	if left != 0 {
		t.Errorf("%d read queues left after all calls returned", left)
	}
}

// TestSchedReadsLeaderGivesUp: when the call that would start the next
// read is cancelled while it waits, it returns its context's error and the
// calls that joined it read alone.
func TestSchedReadsLeaderGivesUp(t *testing.T) {
	var sr schedReads
	f := newFakeReads()
	a := doAsync(t.Context(), &sr, f)
	<-f.started
	leaderCtx, cancel := context.WithCancel(t.Context())
	b := doAsync(leaderCtx, &sr, f)
	waitFor(t, "the next read's leader", func() bool { return sr.nextCallers("k") == 1 })
	c := doAsync(t.Context(), &sr, f)
	waitFor(t, "a call joining it", func() bool { return sr.nextCallers("k") == 2 })
	cancel()
	if r := <-b; r.err == nil {
		t.Errorf("cancelled leader got read %d and no error", r.read)
	}
	if n := <-f.started; n != 2 {
		t.Fatalf("the joined call's own read is call %d, want 2", n)
	}
	close(f.gate(2))
	if r := <-c; r.err != nil || r.read != 2 || r.shared {
		t.Errorf("joined call got read %d (shared %v), %v; want its own read 2", r.read, r.shared, r.err)
	}
	close(f.gate(1))
	if r := <-a; r.err != nil || r.read != 1 {
		t.Errorf("first call got read %d, %v; want read 1", r.read, r.err)
	}
}
