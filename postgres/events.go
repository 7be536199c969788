package postgres

import (
	"sync"
	"sync/atomic"

	"github.com/coordinated/coordinated/coordinate"
)

// Unit transition counters (coordinate.SpecEvents, for /metrics), per
// process: each daemon counts the transitions the transactions IT
// committed made, after the commit, from what the request pipeline
// already knows (countDelta, the claims' and fast finishes' answers, the
// sweep's). No SQL is added for them. Prometheus sums them over the
// daemons sharing a database. A unit changed several times in one
// transaction counts as one transition, from its stored status to its new
// one.

// maxEventSpecs bounds the specs counted; when reached, the entries of
// specs no longer in the database are dropped at the next Stats, and
// specs beyond it report no counters (Events nil) meanwhile.
const maxEventSpecs = 1 << 16

// specEvents is one transaction's transitions by spec id.
type specEvents map[int64]*coordinate.SpecEvents

// of returns spec's entry, created on first use.
func (e specEvents) of(spec int64) *coordinate.SpecEvents {
	ev := e[spec]
	if ev == nil {
		ev = &coordinate.SpecEvents{}
		e[spec] = ev
	}
	return ev
}

// note counts one transition of a unit of spec (coordinate.SpecEvents.Note).
func (e specEvents) note(spec int64, from, to coordinate.Status, expiry bool) {
	e.of(spec).Note(from, to, expiry)
}

// specCounters is one spec's running totals.
type specCounters struct {
	added, leased, finished, failed, retried, expired atomic.Uint64
}

func (c *specCounters) add(ev *coordinate.SpecEvents) {
	c.added.Add(ev.Added)
	c.leased.Add(ev.Leased)
	c.finished.Add(ev.Finished)
	c.failed.Add(ev.Failed)
	c.retried.Add(ev.Retried)
	c.expired.Add(ev.Expired)
}

func (c *specCounters) load() *coordinate.SpecEvents {
	return &coordinate.SpecEvents{
		Added: c.added.Load(), Leased: c.leased.Load(), Finished: c.finished.Load(),
		Failed: c.failed.Load(), Retried: c.retried.Load(), Expired: c.expired.Load(),
	}
}

// transitions is the backend's counters by spec id.
type transitions struct {
	mu    sync.RWMutex
	specs map[int64]*specCounters
}

func newTransitions() *transitions { return &transitions{specs: map[int64]*specCounters{}} }

// counters returns spec's counters, created on first use (nil past
// maxEventSpecs).
func (t *transitions) counters(spec int64) *specCounters {
	t.mu.RLock()
	c := t.specs[spec]
	t.mu.RUnlock()
	if c != nil {
		return c
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c = t.specs[spec]; c == nil && len(t.specs) < maxEventSpecs {
		c = &specCounters{}
		t.specs[spec] = c
	}
	return c
}

// committed adds the transitions of a committed transaction.
func (t *transitions) committed(e specEvents) {
	for spec, ev := range e {
		if c := t.counters(spec); c != nil {
			c.add(ev)
		}
	}
}

// read returns spec's totals: zero when nothing was counted, nil when the
// spec is beyond the bound.
func (t *transitions) read(spec int64) *coordinate.SpecEvents {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if c := t.specs[spec]; c != nil {
		return c.load()
	}
	if len(t.specs) >= maxEventSpecs {
		return nil
	}
	return &coordinate.SpecEvents{}
}

// full reports whether the bound is reached, and then the specs counted.
func (t *transitions) full() ([]int64, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if len(t.specs) < maxEventSpecs {
		return nil, false
	}
	ids := make([]int64, 0, len(t.specs))
	for id := range t.specs {
		ids = append(ids, id)
	}
	return ids, true
}

// drop drops the counters of the specs checked that are not live.
func (t *transitions) drop(checked []int64, live map[int64]bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range checked {
		if !live[id] {
			delete(t.specs, id)
		}
	}
}
