package web

import (
	"slices"
	"strings"
	"testing"

	"github.com/coordinated/coordinated/coordinate"
)

func TestHistoryRates(t *testing.T) {
	h := newHistory(3)
	sample := func(done ...int) {
		var specs []coordinate.SpecStats
		for i, n := range done {
			sp := coordinate.SpecStats{Name: coordinate.Name{Bytes: string(rune('a' + i))}}
			sp.Counts[coordinate.StatusFinished] = n
			specs = append(specs, sp)
		}
		h.record(specs)
	}
	sample(0, 5)
	sample(4, 5)
	sample(10, 7)
	sample(10, 2) // units deleted: never a negative rate
	sample(15)    // spec b deleted: its history goes
	if got := h.rate("a"); !slices.Equal(got, []int{6, 0, 5}) {
		t.Errorf("rate(a) = %v, want the last 3 steps [6 0 5]", got)
	}
	if got := h.rate("b"); got != nil {
		t.Errorf("rate(b) after deletion = %v", got)
	}
	if svg := string(sparkline([]int{0, 6, 3})); !strings.Contains(svg, "<polyline") || !strings.Contains(svg, "peak 6") {
		t.Errorf("sparkline = %s", svg)
	}
}
