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
	Flushes uint64 // write rounds that wrote something (groups)
	Syncs   uint64 // fsyncs of segment files

	// GroupRecords is the distribution of records per written group, and
	// SyncSeconds that of the group fsyncs' durations.
	GroupRecords, SyncSeconds histo.Snapshot
}

// counters are updated without the journal lock.
type counters struct {
	records, bytes, flushes, syncs atomic.Uint64

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

// observeGroup counts the records of a written group ending at upTo.
func (c *counters) observeGroup(upTo Ticket) {
	if upTo <= c.lastGroupEnd {
		return
	}
	g, _ := c.hists()
	g.Observe(float64(upTo - c.lastGroupEnd))
	c.lastGroupEnd = upTo
}

// observeSync records how long a group's fsync took.
func (c *counters) observeSync(d time.Duration) {
	_, s := c.hists()
	s.Observe(d.Seconds())
}

// Stats returns the counters so far.
func (j *Journal) Stats() Stats {
	g, s := j.counters.hists()
	return Stats{
		Records:      j.counters.records.Load(),
		Bytes:        j.counters.bytes.Load(),
		Flushes:      j.counters.flushes.Load(),
		Syncs:        j.counters.syncs.Load(),
		GroupRecords: g.Snapshot(),
		SyncSeconds:  s.Snapshot(),
	}
}
