package cachekeep

import "time"

// Warming the front of a queue after bulk adds. The read-ahead follows
// claims, so the first claim of a drain can at best read its own units
// alongside (readahead.go): at a million queued units, 128 workers asking
// for 100 units each make a claim that reads 12,800 rows' pages, and each
// page read first evicts, and writes back, a page the adds left dirty in
// shared_buffers, so the start of a drain ran markedly slower than the
// rest of it (docs/postgres.md, "Warming the front of a queue").
//
// So when a spec has had at least warmMinAdded units added and then no
// adds for warmIdle, the Keeper reads the rows of the units at the front
// of its queue the way the read-ahead does, while nothing waits for it.
// It reads as many units as shared_buffers has pages (at most
// warmMaxUnits): the units are spread over the table, so that is the most
// that can stay cached, and the first claims of a drain take that many
// soon (128 workers asking for 100 each take 12,800 at once; a warm of
// half as many left most of the gain untaken).
// One spec is warmed at a time; a spec whose claims are being read ahead
// already is left to that.

const (
	warmMinAdded = 10000
	warmIdle     = time.Second
	warmMaxUnits = 65536
)

// headWarmer is the read-ahead's state for warming queue fronts; it is
// guarded by readAhead.mu.
type headWarmer struct {
	idle    time.Duration // adds quiet this long before a warm (warmIdle; tests shorten it)
	units   int           // units a warm reads
	specs   map[int64]*specWarm
	current *readAheadSpec // the spec warmed last: while it reads, others wait their turn
}

// specWarm counts the units added to one spec since its last warm.
type specWarm struct {
	added int
	timer *time.Timer
}

// warmAfterAdds records n units added to spec and, once they reach
// warmMinAdded, (re)starts the spec's timer: the warm starts when adds have
// been quiet for the idle time.
func (k *Keeper) warmAfterAdds(spec int64, n int) {
	ra := &k.readAhead
	ra.mu.Lock()
	defer ra.mu.Unlock()
	w := &ra.warm
	if ra.off || ra.closed || w.units <= 0 {
		return
	}
	sw := w.specs[spec]
	if sw == nil {
		sw = &specWarm{}
		w.specs[spec] = sw
	}
	sw.added += n
	switch {
	case sw.added < warmMinAdded:
	case sw.timer == nil:
		sw.timer = time.AfterFunc(w.idle, func() { k.warmHead(spec, sw) })
	default:
		sw.timer.Reset(w.idle)
	}
}

// warmHead reads the front of spec's queue (the timer of sw fired).
func (k *Keeper) warmHead(spec int64, sw *specWarm) {
	ra := &k.readAhead
	ra.mu.Lock()
	defer ra.mu.Unlock()
	w := &ra.warm
	if ra.off || w.specs[spec] != sw {
		return // closing (its timer was stopped too late), or a later timer took over
	}
	if w.current != nil && w.current.running {
		sw.timer.Reset(w.idle)
		return
	}
	delete(w.specs, spec)
	st := ra.specs[spec]
	if st == nil {
		st = &readAheadSpec{}
		ra.specs[spec] = st
	}
	if st.running {
		return // claims are being read ahead
	}
	st.frontier, st.ahead = queueHead, 0
	w.current = st
	k.startReadAhead(spec, st, w.units)
}

// stopWarming stops the timers of pending warms (at Close). The caller
// holds ra.mu.
func (w *headWarmer) stopWarming() {
	for spec, sw := range w.specs {
		if sw.timer != nil {
			sw.timer.Stop()
		}
		delete(w.specs, spec)
	}
}
