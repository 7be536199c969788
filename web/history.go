package web

import (
	"context"
	"sync"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// Throughput for the sparklines: every historyStep the server samples each
// spec's completed count (FINISHED + FAILED, from Stats), and keeps the
// last historyLen differences.
const (
	historyStep = 10 * time.Second
	historyLen  = 60
)

// maxHistorySpecs bounds how many specs' histories are kept.
const maxHistorySpecs = 1000

type history struct {
	mu    sync.Mutex
	n     int
	last  map[string]int   // completed count at the previous sample
	rates map[string][]int // completions per step, oldest first
}

func newHistory(n int) *history {
	return &history{n: n, last: map[string]int{}, rates: map[string][]int{}}
}

// record adds one sample of every spec's completed count.
func (h *history) record(specs []coordinate.SpecStats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := make(map[string]bool, len(specs))
	for i, sp := range specs {
		if i >= maxHistorySpecs {
			break
		}
		name := sp.Name.Bytes
		seen[name] = true
		done := sp.Counts[coordinate.StatusFinished] + sp.Counts[coordinate.StatusFailed]
		prev, ok := h.last[name]
		h.last[name] = done
		if !ok {
			continue
		}
		r := append(h.rates[name], max(0, done-prev))
		if len(r) > h.n {
			r = r[len(r)-h.n:]
		}
		h.rates[name] = r
	}
	for name := range h.last {
		if !seen[name] {
			delete(h.last, name)
			delete(h.rates, name)
		}
	}
}

// rate returns a spec's completions per step, oldest first.
func (h *history) rate(name string) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.rates[name]...)
}

func (s *Server) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.ScrapeTimeout)
	defer cancel()
	st, err := s.stats(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("dashboard: sampling throughput", "error", err)
		}
		return
	}
	s.history.record(st.Specs)
}
