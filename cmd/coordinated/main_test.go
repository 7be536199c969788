package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/internal/testdaemon"
)

// TestMain lets the test binary act as the daemon: the SIGTERM test starts
// a copy of itself with COORDINATED_TEST_DAEMON=1, which runs main.
func TestMain(m *testing.M) {
	// Never touch the user's real state directory from a test.
	state, err := os.MkdirTemp("", "coordinated-test-state")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	if os.Getenv("COORDINATED_TEST_DAEMON") == "1" {
		os.Args = append([]string{"coordinated"}, strings.Fields(os.Getenv("COORDINATED_TEST_ARGS"))...)
		main()
		os.RemoveAll(state)
		os.Exit(0)
	}
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}

// startDaemon runs the daemon in-process and returns its address and a
// function that stops it and returns run's error. It keeps its data in a
// fresh directory unless args say otherwise.
func startDaemon(t *testing.T, args ...string) (string, *testdaemon.SyncBuffer, func() error) {
	t.Helper()
	return startExact(t, append([]string{"-listen", "127.0.0.1:0", "-data-dir", t.TempDir()}, args...)...)
}

// startExact is startDaemon with exactly these arguments.
func startExact(t *testing.T, args ...string) (string, *testdaemon.SyncBuffer, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	logs := &testdaemon.SyncBuffer{}
	go func() {
		done <- run(ctx, args, io.Discard, logs, ready)
	}()
	select {
	case addr := <-ready:
		stop := func() error { cancel(); return <-done }
		t.Cleanup(func() { cancel() })
		return addr.String(), logs, stop
	case err := <-done:
		cancel()
		t.Fatalf("daemon did not start: %v\n%s", err, logs.String())
	}
	return "", nil, nil
}

func TestDaemonServesRPCsAndStops(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("coordinate:\n  job_queue:\n    limit_completed_count: 1\nhello: world\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, logs, stop := startDaemon(t, "-config", cfg, "-log-level", "debug")
	c, err := cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	mustCall := func(method string, params ...any) string {
		t.Helper()
		res, err := c.Call(method, params...)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return fmt.Sprintf("%v", res)
	}
	if got := mustCall("set_work_spec", map[string]any{"name": []byte("ws"), "min_gb": 1}); got != "[true <nil>]" {
		t.Errorf("set_work_spec = %s", got)
	}
	units := []any{cborrpc.Tuple{[]byte("a"), map[string]any{}}, cborrpc.Tuple{[]byte("b"), map[string]any{}}}
	if got := mustCall("add_work_units", []byte("ws"), units); got != "[true <nil>]" {
		t.Errorf("add_work_units = %s", got)
	}
	if got := mustCall("get_work", []byte("w"), map[string]any{"lease_time": 60, "max_jobs": 1}); got != "[[[119 115] [97] map[]] <nil>]" {
		t.Errorf("get_work = %s", got)
	}
	for _, k := range []string{"a", "b"} {
		mustCall("update_work_unit", []byte("ws"), []byte(k), map[string]any{"status": 4})
	}
	if got := mustCall("archive"); got != "<nil>" {
		t.Errorf("archive = %s", got)
	}
	if got := mustCall("count_work_units", []byte("ws")); got != "[map[4:2] <nil>]" {
		t.Errorf("count_work_units after archive = %s", got)
	}
	if got := mustCall("get_config"); !strings.Contains(got, "hello:[119 111 114 108 100]") {
		t.Errorf("get_config = %s", got)
	}
	if _, err := c.Call("snapshot"); err == nil || !strings.Contains(err.Error(), "no such method 'snapshot'") {
		t.Errorf("snapshot: err = %v", err)
	}

	if err := stop(); err != nil {
		t.Fatalf("run returned %v", err)
	}
	for _, want := range []string{"listening addr=" + addr, "connection opened", "request failed", "method=snapshot", "stopped"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}
}

func TestManyConcurrentConnections(t *testing.T) {
	addr, _, stop := startDaemon(t)
	const conns = 1000
	clients := make([]*cborrpc.Client, conns)
	for i := range clients {
		c, err := cborrpc.Dial(addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		defer c.Close()
		clients[i] = c
	}
	// Every connection stays open while all of them make calls at once.
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := []byte(fmt.Sprintf("w%04d", i))
			if _, err := c.Call("worker_heartbeat", id, []byte("RUN"), 600, nil, nil); err != nil {
				errs <- err
				return
			}
			if _, err := c.Call("get_work", id, map[string]any{"max_jobs": 1}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	res, err := clients[0].Call("worker_stats")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res); !strings.Contains(got, fmt.Sprintf("num_workers:%d", conns)) {
		t.Errorf("worker_stats = %s", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-backend", "mysql://x"}, {"-log-level", "loud"}, {"-max-request-size", "0"}, {"extra"}} {
		var stderr bytes.Buffer
		if err := run(context.Background(), args, io.Discard, &stderr, nil); err != errUsage {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"-version"}, &stdout, io.Discard, nil); err != nil || !strings.HasPrefix(stdout.String(), "coordinated ") {
		t.Errorf("-version: %q, %v", stdout.String(), err)
	}
}

func TestSIGTERMExitsCleanly(t *testing.T) {
	d := startDaemonProcess(t, "-listen 127.0.0.1:0") // probes_test.go
	cmd, addr := d.cmd, d.addr
	c, err := cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if res, err := c.Call("list_work_specs", map[string]any{}); err != nil || fmt.Sprint(res) != "[[] <nil>]" {
		t.Fatalf("list_work_specs = %v, %v", res, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("daemon exit after SIGTERM: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("daemon did not exit within a minute of SIGTERM")
	}
}

func TestMaxRequestSizeClosesOnlyThatConnection(t *testing.T) {
	addr, logs, stop := startDaemon(t, "-max-request-size", "1000")
	defer stop()
	good, err := cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	big, err := cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	if _, err := big.Call("set_work_spec", map[string]any{"name": []byte("ws"), "pad": make([]byte, 5000)}); err == nil {
		t.Fatal("a request over -max-request-size was answered")
	}
	if res, err := good.Call("list_work_specs", map[string]any{}); err != nil || fmt.Sprint(res) != "[[] <nil>]" {
		t.Fatalf("the other connection broke: %v, %v", res, err)
	}
	if !strings.Contains(logs.String(), "request too large") {
		t.Errorf("no log line for the oversized request:\n%s", logs.String())
	}
}
