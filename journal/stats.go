package journal

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/coordinated/coordinated/internal/histo"
)

// Stats are counters since Open, for metrics and benchmarks.
type Stats struct {
	Records uint64 // records appended
	Bytes   uint64 // bytes appended, framing included
	Flushes uint64 // write rounds that wrote something (groups): GroupRecords.Count
	Syncs   uint64 // fsyncs of segment files (a group's O_DSYNC write counts as one)
	// Waiters counts the Wait calls that slept until a written group
	// released them (a finish answered after its group's sync, say):
	// Waiters / Flushes is the mean number of callers a group serves,
	// which Records / Flushes overstates with the records nobody waits
	// for (a lease riding along with a finish).
	Waiters uint64

	// GroupRecords is the distribution of records per written group, and
	// SyncSeconds that of the group fsyncs' durations.
	GroupRecords, SyncSeconds histo.Snapshot
}

// counters are updated without the journal lock. Each figure has one
// owner: Append counts records and bytes; the flush loop counts groups and
// the waiters they released (observeGroup, once per round that wrote
// records) and syncs (groupSynced for a group's sync, synced for the
// others).
type counters struct {
	records, bytes, syncs, waiters atomic.Uint64

	histOnce     sync.Once
	groupRecords *histo.Histogram
	syncSeconds  *histo.Histogram
	lastGroupEnd Ticket // last ticket counted in groupRecords (flush loop only)
}

func (c *counters) hists() (groups, syncs *histo.Histogram) {
	c.histOnce.Do(func() {
		c.groupRecords = histo.Exponential(1, 2, 12)     // 1 to 2048 records
		c.syncSeconds = histo.Exponential(0.0001, 2, 16) // 100 µs to 3.3 s
	})
	return c.groupRecords, c.syncSeconds
}

// observeGroup counts the records of a written group ending at upTo and
// the waiters its publication woke.
func (c *counters) observeGroup(upTo Ticket, waiters int) {
	if upTo <= c.lastGroupEnd {
		return
	}
	g, _ := c.hists()
	g.Observe(float64(upTo - c.lastGroupEnd))
	c.lastGroupEnd = upTo
	c.waiters.Add(uint64(waiters))
}

// groupSynced counts a group's sync, which started at start, and records
// its duration.
func (c *counters) groupSynced(start time.Time) {
	_, s := c.hists()
	s.Observe(time.Since(start).Seconds())
	c.syncs.Add(1)
}

// synced counts a sync that is not a group's (preallocation, a finished
// segment).
func (c *counters) synced() { c.syncs.Add(1) }

// GroupCounts returns Stats().Flushes and Stats().Waiters without copying
// the distributions: for a caller that polls them (the daemon's adaptive
// processor count, cmd/coordinated/procs.go).
func (j *Journal) GroupCounts() (groups, waiters uint64) {
	g, _ := j.counters.hists()
	return g.Count(), j.counters.waiters.Load()
}

// Stats returns the counters so far.
func (j *Journal) Stats() Stats {
	g, s := j.counters.hists()
	groups := g.Snapshot()
	return Stats{
		Records:      j.counters.records.Load(),
		Bytes:        j.counters.bytes.Load(),
		Flushes:      groups.Count,
		Syncs:        j.counters.syncs.Load(),
		Waiters:      j.counters.waiters.Load(),
		GroupRecords: groups,
		SyncSeconds:  s.Snapshot(),
	}
}
