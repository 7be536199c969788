package journal

import "time"

// Gathering the waiters a group is expected to carry (SyncGroup only;
// docs/persistence.md, "Group commit, fifth pass").
//
// The flusher used to take a round as soon as the previous one was
// published. With a few busy connections that settles into groups that
// alternate a burst (the connections released together come back
// together) with a straggler or two that missed it by a few µs and cost a
// sync of their own, every finish waiting on average most of a sync in
// flight plus its own. Before taking a round, the flusher now waits, for
// at most about one sync, until as many callers wait for it as the most
// any recent group released: the connections that were just answered and
// are coming back. A lone client's groups release one caller, so it never
// waits; when fewer callers come back (a worker stopped), the round goes
// at the deadline and the expectation falls within gatherHistory rounds.

// gatherHistory is how many recent groups the expectation looks back on.
const gatherHistory = 8

// gatherer is the flusher's memory of recent groups (used by the flush
// loop only, once Replay has started it).
type gatherer struct {
	released [gatherHistory]int // Wait calls released by the last groups (a ring)
	next     int                // where the next group goes in released
	sync     time.Duration      // moving average of a group's write and sync
	limit    time.Duration      // the longest wait, whatever the syncs cost
	timer    *time.Timer        // stopped between waits
}

func newGatherer() gatherer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return gatherer{limit: maxGather, timer: t}
}

// observe records a written group: how many callers it released and how
// long its write and sync took.
func (g *gatherer) observe(released int, took time.Duration) {
	g.released[g.next] = released
	g.next = (g.next + 1) % gatherHistory
	if g.sync == 0 {
		g.sync = took
	} else {
		g.sync += (took - g.sync) / 8
	}
}

// expected is how many waiters the next group should carry.
func (g *gatherer) expected() int {
	n := 0
	for _, r := range g.released {
		n = max(n, r)
	}
	return n
}

// patience bounds the wait for the expected callers: one sync (the moving
// average), past which a straggler is better left to the next group.
func (g *gatherer) patience() time.Duration { return min(g.sync, g.limit) }

// maxGather caps the wait whatever the syncs cost: a disk whose syncs take
// milliseconds is slow enough that its groups fill while one is written.
const maxGather = time.Millisecond

// gather waits until the next round has the expected number of waiters,
// the patience ran out, or the journal closes. The waiters that arrive
// meanwhile kick the flusher only when the count is reached
// (Journal.Wait), so the flusher wakes once.
func (j *Journal) gather() {
	g := &j.gatherer
	want := g.expected()
	if want < 2 {
		return
	}
	deadline := time.Now().Add(g.patience())
	defer func() {
		j.mu.Lock()
		j.gatherWant = 0
		j.mu.Unlock()
	}()
	for {
		j.mu.Lock()
		if j.nextWaiters == 0 || j.nextWaiters >= want || j.closed || j.failed != nil {
			j.mu.Unlock()
			return
		}
		j.gatherWant = want
		j.mu.Unlock()
		wait := time.Until(deadline)
		if wait <= 0 {
			return
		}
		g.timer.Reset(wait)
		select {
		case <-j.kick:
		case <-g.timer.C:
		case <-j.stop:
		}
		g.timer.Stop()
	}
}
