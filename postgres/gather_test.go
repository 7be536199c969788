package postgres

import (
	"testing"
	"time"
)

// idleCommitter is a committer with nothing in flight and no workers, for
// calling gather directly.
func idleCommitter(wait time.Duration, recent ...int) *committer {
	c := &committer{queue: make(chan *commitItem, 16), stop: make(chan struct{}),
		freed: make(chan struct{}, 1), enough: make(chan struct{}, 1), idleWait: wait}
	for _, n := range recent {
		c.started(n)
	}
	return c
}

// TestGatherWaitsForRecentBatchSize: with nothing in flight, a batch waits
// for as many requests as the biggest recent batch held (their callers
// are sending their next ones), however late they come within the wait.
func TestGatherWaitsForRecentBatchSize(t *testing.T) {
	c := idleCommitter(time.Hour, 1, 3, 2)
	go func() {
		time.Sleep(20 * time.Millisecond) // a gather that does not wait has returned by now
		c.enqueue(&commitItem{})
		c.enqueue(&commitItem{})
	}()
	batch := []*commitItem{{}}
	if !c.gather(&batch) || len(batch) != 3 {
		t.Errorf("gathered %d requests, want the 3 the biggest recent batch held", len(batch))
	}
}

// TestGatherIdleWaitEnds: the wait is bounded: a lone request starts once
// it ends, at once when recent batches held more than a handful, and a
// stopping committer ends it at once.
func TestGatherIdleWaitEnds(t *testing.T) {
	c := idleCommitter(time.Millisecond, 8)
	batch := []*commitItem{{}}
	if !c.gather(&batch) || len(batch) != 1 {
		t.Errorf("gathered %d requests, want the lone 1", len(batch))
	}
	// Recent batches of more than a handful: nothing waits.
	c = idleCommitter(time.Hour, idleGatherMost+1)
	batch = []*commitItem{{}}
	if !c.gather(&batch) || len(batch) != 1 {
		t.Errorf("gathered %d requests after a batch of %d, want the lone 1", len(batch), idleGatherMost+1)
	}
	c = idleCommitter(time.Hour, 8)
	close(c.stop)
	if c.gather(&batch) {
		t.Error("gather went on after the committer stopped")
	}
}

// TestExpectedFollowsRecentBatches: the size waited for is the biggest of
// the last recentBatches batches, and at least 1; 1 when that is more
// than idleGatherMost.
func TestExpectedFollowsRecentBatches(t *testing.T) {
	c := idleCommitter(time.Hour)
	if n := c.expected(); n != 1 {
		t.Errorf("expected %d with no batches yet, want 1", n)
	}
	c.started(8)
	for range recentBatches - 1 {
		c.started(2)
	}
	if n := c.expected(); n != 8 {
		t.Errorf("expected %d, want 8 (still among the recent batches)", n)
	}
	c.started(2)
	if n := c.expected(); n != 2 {
		t.Errorf("expected %d once the batch of 8 is no longer recent, want 2", n)
	}
	c.started(idleGatherMost + 1)
	if n := c.expected(); n != 1 {
		t.Errorf("expected %d after a batch of %d, want 1", n, idleGatherMost+1)
	}
}

// enqueue queues it without waiting for its result, waking the gathering
// worker as submit does.
func (c *committer) enqueue(it *commitItem) {
	c.queue <- it
	c.arrived()
}
