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
	timer    *gatherTimer       // made by the flush loop; disarmed between waits
	// missed counts the waits in a row that ran out. After missedLimit of
	// them the next skip rounds are taken without waiting; backoff, the
	// length of that pause, doubles with every further wait that runs
	// out, and both start over when a wait is answered.
	missed, skip, backoff int
}

func newGatherer() gatherer { return gatherer{limit: maxGather} }

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
	if g.skip > 0 {
		g.skip--
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
		n, done := j.nextWaiters+len(j.nextNotices), j.closed || j.failed != nil
		if n == 0 || n >= want || done {
			j.mu.Unlock()
			if n >= want {
				g.missed, g.backoff = 0, 0
			}
			return
		}
		j.gatherWant = want
		j.mu.Unlock()
		wait := time.Until(deadline)
		if wait <= 0 {
			g.ranOut()
			return
		}
		g.timer.arm(wait)
		select {
		case <-j.kick:
		case <-g.timer.c:
		case <-j.stop:
		}
		g.timer.disarm()
	}
}

// ranOut counts a wait that ran out, and pauses the waiting after
// missedLimit in a row: the callers do not come back together (workers
// that spend varying time between finishes, say), and a timer shorter than
// a millisecond fires late on an idle process (the runtime's netpoller
// sleeps in whole milliseconds), so such waits cost a millisecond or more
// each. One late straggler among connections that do come back together
// pauses nothing. The pause doubles with each further wait that runs out,
// from gatherHistory rounds up to maxBackoff.
func (g *gatherer) ranOut() {
	if g.missed++; g.missed < missedLimit {
		return
	}
	g.backoff = min(max(2*g.backoff, gatherHistory), maxBackoff)
	g.skip = g.backoff
}

// missedLimit is how many waits in a row must run out before they pause.
const missedLimit = 2

// maxBackoff is the longest pause, in rounds, after waits that ran out.
const maxBackoff = 256
