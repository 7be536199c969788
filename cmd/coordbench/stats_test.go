package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	cases := []struct {
		p    float64
		want time.Duration
	}{
		{50, 50 * time.Millisecond},
		{99, 99 * time.Millisecond},
		{100, 100 * time.Millisecond},
		{0.5, 1 * time.Millisecond},
		{99.5, 100 * time.Millisecond},
	}
	for _, tc := range cases {
		if got := percentile(ds, tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("single sample p99 = %v", got)
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("empty p50 = %v", got)
	}
	// Three samples: p50 is the 2nd, p99 the 3rd.
	three := []time.Duration{1, 2, 3}
	if percentile(three, 50) != 2 || percentile(three, 99) != 3 {
		t.Errorf("three samples: p50 %v p99 %v", percentile(three, 50), percentile(three, 99))
	}
}

func TestResultSummarisesUnsortedSamples(t *testing.T) {
	lat := latencies{}
	other := latencies{}
	// get_work: 1..10 ms out of order, split over two connections.
	for _, v := range []int{7, 3, 10, 1, 5} {
		lat.add("get_work", time.Duration(v)*time.Millisecond)
	}
	for _, v := range []int{2, 9, 4, 8, 6} {
		other.add("get_work", time.Duration(v)*time.Millisecond)
	}
	other.add("update_work_unit", 2*time.Millisecond)
	lat.merge(other)

	r := newResult("drain1", 500, 2*time.Second, lat)
	if r.UnitsPerSec != 250 {
		t.Errorf("units/s = %v, want 250", r.UnitsPerSec)
	}
	if len(r.Methods) != 2 || r.Methods[0].Method != "get_work" || r.Methods[1].Method != "update_work_unit" {
		t.Fatalf("methods = %+v", r.Methods)
	}
	gw := r.Methods[0]
	if gw.Calls != 10 || gw.P50Ms != 5 || gw.P99Ms != 10 || gw.MaxMs != 10 {
		t.Errorf("get_work stats = %+v", gw)
	}
	// Summarising must not reorder the caller's samples.
	if lat["get_work"][0] != 7*time.Millisecond {
		t.Error("newResult sorted the samples in place")
	}

	var text bytes.Buffer
	if err := r.writeText(&text); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a workload line and 2 method lines, got:\n%s", text.String())
	}
	if !strings.Contains(lines[0], "units/s=250") || !strings.Contains(lines[1], "rpc=get_work") ||
		!strings.Contains(lines[1], "p50=5.000ms") || !strings.Contains(lines[1], "p99=10.000ms") {
		t.Errorf("text report:\n%s", text.String())
	}

	var js bytes.Buffer
	if err := r.writeJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back result
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON report does not parse: %v\n%s", err, js.String())
	}
	if back.Workload != "drain1" || back.Units != 500 || len(back.Methods) != 2 || back.Methods[0].P99Ms != 10 {
		t.Errorf("JSON round trip: %+v", back)
	}
}

func TestParseQueued(t *testing.T) {
	got, err := parseCounts("10000, 100000,1000000")
	if err != nil || len(got) != 3 || got[0] != 10000 || got[2] != 1000000 {
		t.Errorf("parseCounts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "10,x", "0", "-5"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q) accepted", bad)
		}
	}
}

func TestQuotaNeverOvercommits(t *testing.T) {
	q := &quota{limit: 10}
	if got := q.take(4); got != 4 {
		t.Fatalf("take 4 = %d", got)
	}
	if got := q.take(100); got != 6 {
		t.Fatalf("take 100 with 6 left = %d", got)
	}
	if got := q.take(1); got != 0 {
		t.Fatalf("take from empty quota = %d", got)
	}
	q.give(3)
	if got := q.take(5); got != 3 {
		t.Fatalf("take after give(3) = %d", got)
	}
}
