// Package histo is a fixed-bucket histogram updated with atomics, so hot
// paths (the journal's flush loop, the PostgreSQL committer) can record
// sizes and latencies without a lock or a dependency on a metrics library.
// The daemon's /metrics endpoint exports its snapshots.
package histo

import (
	"math"
	"sync/atomic"
)

// Histogram counts observations in buckets with fixed upper bounds. The
// zero value is not usable; make one with New or Exponential.
type Histogram struct {
	bounds []float64
	counts []atomic.Uint64 // one per bound, plus +Inf
	sum    atomic.Uint64   // float64 bits
	count  atomic.Uint64
}

// New returns a histogram with these bucket upper bounds (ascending).
func New(bounds ...float64) *Histogram {
	return &Histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

// Exponential returns a histogram of n buckets: start, start*factor, ...
func Exponential(start, factor float64, n int) *Histogram {
	b := make([]float64, n)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return New(b...)
}

// Observe records one value.
func (h *Histogram) Observe(v float64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.count.Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Count returns how many values were observed, without copying the
// buckets.
func (h *Histogram) Count() uint64 { return h.count.Load() }

// Snapshot is a histogram's state at one moment.
type Snapshot struct {
	Bounds     []float64 // bucket upper bounds, ascending
	Cumulative []uint64  // observations <= Bounds[i]
	Count      uint64
	Sum        float64
}

// Snapshot returns the counts so far. Concurrent observations may be
// partly included; Count is never less than the last cumulative bucket.
func (h *Histogram) Snapshot() Snapshot {
	s := Snapshot{Bounds: h.bounds, Cumulative: make([]uint64, len(h.bounds))}
	var c uint64
	for i := range h.bounds {
		c += h.counts[i].Load()
		s.Cumulative[i] = c
	}
	s.Count = max(h.count.Load(), c)
	s.Sum = math.Float64frombits(h.sum.Load())
	return s
}
