package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
)

func TestWarnStalledOncePerTimeout(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := &coordinate.GroupStatus{Group: "build-7", Counts: map[coordinate.Status]int{coordinate.StatusAvailable: 3}, Stalled: true, LastProgress: t0}
	lines := func() int { return strings.Count(buf.String(), "group stalled") }

	warned := warnStalled([]*coordinate.GroupStatus{g}, nil, t0.Add(10*time.Minute), 10*time.Minute, log)
	if lines() != 1 || !strings.Contains(buf.String(), "group=build-7") || !strings.Contains(buf.String(), "available=3") {
		t.Fatalf("first check logged:\n%s", buf.String())
	}
	warned = warnStalled([]*coordinate.GroupStatus{g}, warned, t0.Add(15*time.Minute), 10*time.Minute, log)
	if lines() != 1 {
		t.Fatalf("warned again within the timeout:\n%s", buf.String())
	}
	warned = warnStalled([]*coordinate.GroupStatus{g}, warned, t0.Add(20*time.Minute), 10*time.Minute, log)
	if lines() != 2 {
		t.Fatalf("no repeat after a whole timeout:\n%s", buf.String())
	}
	// Progress clears it; stalling again is reported at once.
	warned = warnStalled(nil, warned, t0.Add(21*time.Minute), 10*time.Minute, log)
	warnStalled([]*coordinate.GroupStatus{g}, warned, t0.Add(22*time.Minute), 10*time.Minute, log)
	if lines() != 3 {
		t.Fatalf("a group stalled anew was not reported:\n%s", buf.String())
	}
}

// TestDaemonLogsStalledGroup runs the daemon with a short stall timeout and
// waits (bounded) for the watchdog's warning about a group nobody works on.
func TestDaemonLogsStalledGroup(t *testing.T) {
	addr, logs, stop := startDaemon(t, "-data-dir", "", "-stall-timeout", "200ms")
	defer stop()
	c, err := cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call("set_work_spec", map[string]any{"name": []byte("ws"), "min_gb": 1}); err != nil {
		t.Fatal(err)
	}
	units := []any{cborrpc.Tuple{[]byte("a"), map[string]any{}, map[string]any{"group": []byte("nightly")}}}
	if _, err := c.Call("add_work_units", []byte("ws"), units); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), "group stalled") {
		if time.Now().After(deadline) {
			t.Fatalf("no stall warning within 20 s; log:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "group=nightly") {
		t.Errorf("stall warning does not name the group:\n%s", logs.String())
	}
}
