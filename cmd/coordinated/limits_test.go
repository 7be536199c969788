package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
)

func TestLimitFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-max-connections", "0"}, {"-request-budget", "-1"}, {"-max-unit-data", "0"},
		{"-max-lock-keys", "0"}, {"-max-reply-bytes", "0"},
	} {
		var stderr bytes.Buffer
		if err := run(context.Background(), args, io.Discard, &stderr, nil); err != errUsage {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
}

func TestDerivedRequestBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meminfo")
	if err := os.WriteFile(path, []byte("MemFree:  100 kB\nMemTotal:       24683656 kB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := memTotal(path); got != 24683656<<10 {
		t.Fatalf("memTotal = %d", got)
	}
	if got := derivedRequestBudget(24683656 << 10); got != 24683656<<10/4 {
		t.Errorf("budget for 24 GB = %d, want a quarter", got)
	}
	if got := derivedRequestBudget(0); got != minRequestBudget {
		t.Errorf("budget with memory unknown = %d, want %d", got, minRequestBudget)
	}
	if machineMemory() <= 0 {
		t.Error("machineMemory found nothing on a Linux test machine")
	}
}

// The daemon raises its soft open-file limit to the hard one, so 1,024
// idle connections cannot lock new clients out.
func TestRaiseFileLimit(t *testing.T) {
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig) })
	if orig.Max < 512 {
		t.Fatalf("hard open-file limit %d is too low to test with", orig.Max)
	}
	low := orig
	low.Cur = 256
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	got, err := raiseFileLimit()
	if err != nil || got != uint64(orig.Max) {
		t.Fatalf("raiseFileLimit = %d, %v; want the hard limit %d", got, err, orig.Max)
	}
	var now syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &now)
	if now.Cur != orig.Max {
		t.Errorf("soft limit %d after raising, want %d", now.Cur, orig.Max)
	}
}

// The daemon's flags reach the server and the job server: a connection
// over -max-connections is closed at once and logged, a lock call over
// -max-lock-keys is refused, and the limits are logged at start.
func TestDaemonLimits(t *testing.T) {
	addr, logs, stop := startDaemon(t, "-max-connections", "2", "-max-lock-keys", "2")
	defer stop()
	var clients []*cborrpc.Client
	for range 2 {
		c, err := cborrpc.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Call("now"); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("third connection: read %v, want it closed", err)
	}
	keys := []any{[]any{[]byte("a")}, []any{[]byte("b")}, []any{[]byte("c")}}
	_, err = clients[0].Call("lock", []byte("me"), 10, keys)
	var rpcErr *cborrpc.RPCError
	if !errors.As(err, &rpcErr) || !strings.Contains(rpcErr.Message, "exceed the limit of 2") {
		t.Errorf("lock with 3 keys under -max-lock-keys 2: %v", err)
	}
	for _, want := range []string{"connection limit reached", "max_connections=2", "max_lock_keys=2", "request_budget="} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// Unknown method names are logged cut short, whatever their length.
func TestLogTruncatesMethodNames(t *testing.T) {
	addr, logs, stop := startDaemon(t)
	defer stop()
	c, err := cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 5 {
		if _, err := c.Call(strings.Repeat("x", 1<<20)); err == nil {
			t.Fatal("an unknown method was answered")
		}
	}
	if n := len(logs.String()); n > 8<<10 {
		t.Errorf("5 requests with 1 MiB method names wrote %d bytes of log", n)
	}
	if !strings.Contains(logs.String(), "(1048576 bytes)") {
		t.Errorf("the log does not note the names' length:\n%.2000s", logs.String())
	}
}
