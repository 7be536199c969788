package web

import (
	"sync"

	"github.com/coordinated/coordinated/coordinate"
)

// otherEvents keeps the event counters of the "_other" series monotonic.
// The specs folded into "_other" change between scrapes (a spec deleted,
// one created, a labelled spec pushed past the label bound or let back
// in); summing their counters at each scrape made the series fall, which
// Prometheus takes for a counter reset. Instead "_other" adds up each
// folded spec's increase since the previous scrape: a spec new to the
// daemon counts from zero, one that had its own label until now from its
// current value (its past is in its own series), and one that leaves
// "_other" takes nothing away.
type otherEvents struct {
	mu      sync.Mutex
	total   coordinate.SpecEvents
	last    map[string]coordinate.SpecEvents // folded specs at the last scrape
	labeled map[string]bool                  // specs with their own label then
}

// fold returns "_other"'s counters given the specs labelled and the specs
// folded at this scrape; ok is false when no folded spec reports events
// (the series is then not exported).
func (o *otherEvents) fold(labeled, folded []coordinate.SpecStats) (_ coordinate.SpecEvents, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	last := make(map[string]coordinate.SpecEvents, len(folded))
	for _, sp := range folded {
		if sp.Events == nil {
			continue
		}
		ok = true
		cur, name := *sp.Events, sp.Name.Bytes
		prev, seen := o.last[name]
		switch {
		case seen:
			o.total.Add(increase(prev, cur))
		case !o.labeled[name]:
			o.total.Add(&cur)
		}
		last[name] = cur
	}
	o.last = last
	o.labeled = make(map[string]bool, len(labeled))
	for _, sp := range labeled {
		o.labeled[sp.Name.Bytes] = true
	}
	return o.total, ok
}

// increase is cur - prev per counter, 0 where a counter went back (a
// spec deleted and made again under the same name starts over).
func increase(prev, cur coordinate.SpecEvents) *coordinate.SpecEvents {
	d := func(p, c uint64) uint64 {
		if c < p {
			return c
		}
		return c - p
	}
	return &coordinate.SpecEvents{
		Added: d(prev.Added, cur.Added), Leased: d(prev.Leased, cur.Leased),
		Finished: d(prev.Finished, cur.Finished), Failed: d(prev.Failed, cur.Failed),
		Retried: d(prev.Retried, cur.Retried), Expired: d(prev.Expired, cur.Expired),
	}
}
