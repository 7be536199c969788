package journal

import "sync/atomic"

// Stats are counters since Open, for metrics and benchmarks.
type Stats struct {
	Records uint64 // records appended
	Bytes   uint64 // bytes appended, framing included
	Flushes uint64 // write rounds that wrote something (groups)
	Syncs   uint64 // fsyncs of segment files
}

// counters are updated without the journal lock.
type counters struct {
	records, bytes, flushes, syncs atomic.Uint64
}

// Stats returns the counters so far.
func (j *Journal) Stats() Stats {
	return Stats{
		Records: j.counters.records.Load(),
		Bytes:   j.counters.bytes.Load(),
		Flushes: j.counters.flushes.Load(),
		Syncs:   j.counters.syncs.Load(),
	}
}
