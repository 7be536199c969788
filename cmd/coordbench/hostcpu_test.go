package main

import (
	"bytes"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseHostCPU(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	stat := "cpu  100 5 50 800 20 3 2 10 40 0\ncpu0 50 2 25 400 10 1 1 5 20 0\nintr 123\n"
	h, err := parseHostCPU(strings.NewReader(stat))
	if err != nil {
		t.Fatal(err)
	}
	if h.idle != 820 || h.total != 990 {
		t.Fatalf("parsed idle %d total %d, want 820 and 990 (guest time is in user already)", h.idle, h.total)
	}
	later := hostCPU{idle: h.idle + 30, total: h.total + 200}
	if got, ok := later.idleSince(h); !ok || got != 0.15 {
		t.Fatalf("idleSince = %v, %v; want 0.15, true", got, ok)
	}
	for _, bad := range []string{"", "intr 1\n", "cpu 1 2 3\n", "cpu 1 2 x 4 5\n"} {
		if _, err := parseHostCPU(strings.NewReader(bad)); err == nil {
			t.Errorf("parseHostCPU(%q) accepted it", bad)
		}
	}
}

func TestIdleSinceUnknown(t *testing.T) {
	h := hostCPU{idle: 10, total: 100}
	for _, c := range []struct{ a, b hostCPU }{
		{hostCPU{}, h},                    // no reading now
		{h, hostCPU{}},                    // no reading before
		{h, h},                            // no ticks between
		{hostCPU{idle: 5, total: 200}, h}, // idle went back
	} {
		if v, ok := c.a.idleSince(c.b); ok {
			t.Errorf("%+v.idleSince(%+v) = %v, known", c.a, c.b, v)
		}
	}
}

// A stopwatch on Linux reports the machine's idle share in both reports;
// elsewhere it leaves it out of both.
func TestStopwatchReportsHostIdle(t *testing.T) {
	w := startStopwatch()
	time.Sleep(50 * time.Millisecond) // at least a few clock ticks
	r := w.result("sleep", 1, latencies{})
	var text, js bytes.Buffer
	if err := r.writeText(&text); err != nil {
		t.Fatal(err)
	}
	if err := r.writeJSON(&js); err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	_, inJSON := decoded["host_idle"]
	inText := strings.Contains(text.String(), "host_idle=")
	if _, err := os.Stat("/proc/stat"); err != nil || runtime.GOOS != "linux" {
		if r.HostIdle != nil || inJSON || inText {
			t.Fatalf("no /proc/stat, yet host_idle reported: %s %s", text.String(), js.String())
		}
		return
	}
	if r.HostIdle == nil {
		t.Fatalf("on Linux the stopwatch left out host_idle: %s", text.String())
	}
	if *r.HostIdle < 0 || *r.HostIdle > 1 {
		t.Fatalf("host_idle = %v, not a share", *r.HostIdle)
	}
	if !inJSON || !inText {
		t.Fatalf("host_idle missing from a report: %s %s", text.String(), js.String())
	}
}
