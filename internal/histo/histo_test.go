package histo

import (
	"slices"
	"sync"
	"testing"
)

func TestHistogramBuckets(t *testing.T) {
	h := New(1, 10, 100)
	for _, v := range []float64{0.5, 1, 2, 10, 50, 1000} {
		h.Observe(v)
	}
	s := h.Snapshot()
	if want := []uint64{2, 4, 5}; !slices.Equal(s.Cumulative, want) {
		t.Errorf("cumulative = %v, want %v", s.Cumulative, want)
	}
	if s.Count != 6 || s.Sum != 1063.5 {
		t.Errorf("count, sum = %d, %g; want 6, 1063.5", s.Count, s.Sum)
	}
}

func TestHistogramConcurrent(t *testing.T) {
	h := Exponential(1, 2, 4)
	if want := []float64{1, 2, 4, 8}; !slices.Equal(h.Snapshot().Bounds, want) {
		t.Fatalf("bounds = %v, want %v", h.Snapshot().Bounds, want)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				h.Observe(3)
			}
		})
	}
	wg.Wait()
	s := h.Snapshot()
	if s.Count != 8000 || s.Sum != 24000 || s.Cumulative[2] != 8000 || s.Cumulative[1] != 0 {
		t.Errorf("snapshot = %+v", s)
	}
}
