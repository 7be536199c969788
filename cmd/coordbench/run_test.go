package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/jobserver"
	"github.com/coordinated/coordinated/memory"
)

// startDaemon serves a volatile memory backend over CBOR-RPC on a free
// local port, as coordinated does, and returns its address.
func startDaemon(t *testing.T) string {
	t.Helper()
	be := memory.New(memory.Options{})
	ns, err := be.Namespace(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	srv := cborrpc.NewServer(jobserver.New(ns, jobserver.Config{Logger: quiet}), cborrpc.ServerOptions{Logger: quiet})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx) //nolint:errcheck
	})
	return ln.Addr().String()
}

// TestRunAllWorkloads runs every workload, small, against a daemon and
// checks each reports the units it was asked for: the drains really
// finished their units (run checks the counts with count_work_units).
func TestRunAllWorkloads(t *testing.T) {
	addr := startDaemon(t)
	var out, errOut bytes.Buffer
	code := run([]string{"-addr", addr, "-workload", "all", "-units", "300", "-conns", "4",
		"-queued", "100,400", "-sample", "250", "-per-call", "10", "-settle", "10ms", "-think", "100us", "-json"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("coordbench exited %d: %s", code, errOut.String())
	}
	want := map[string]int{"add": 300, "drain1": 300, "drain100": 300, "chain": 600, "weighted": 300,
		"drain10@100": 100, "drain10@400": 250, "preload@100": 100, "preload@400": 400}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r struct {
			Workload string  `json:"workload"`
			Units    int     `json:"units"`
			Rate     float64 `json:"units_per_s"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		if r.Rate <= 0 {
			t.Errorf("%s: rate %v, want > 0", r.Workload, r.Rate)
		}
		got[r.Workload] = r.Units
	}
	for w, n := range want {
		if got[w] != n {
			t.Errorf("%s: %d units reported, want %d (all results: %v)", w, got[w], n, got)
		}
	}
}

// TestRunRejectsBadFlags: nonsense settings exit 2 before any connection.
func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-settle", "-1s"},
		{"-think", "-1ms"},
		{"-conns", "0"},
		{"-per-call", "0"},
		{"-workload", "nope"},
	} {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"-addr", "127.0.0.1:1"}, args...), &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errOut.String())
		}
	}
}
