package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/journal"
)

func TestPersistenceFlags(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	for _, tc := range []struct {
		args     []string
		dir      string
		volatile bool
		sync     journal.SyncPolicy
	}{
		{nil, "/state/coordinated", false, journal.SyncGroup},
		{[]string{"-sync", "none"}, "/state/coordinated", false, journal.SyncNone},
		{[]string{"-sync", "interval=20ms"}, "/state/coordinated", false, journal.SyncInterval},
		{[]string{"-data-dir", "/x"}, "/x", false, journal.SyncGroup},
		{[]string{"-data-dir", ""}, "", true, journal.SyncGroup},
		{[]string{"-backend", "memory:"}, "", true, journal.SyncGroup},
		{[]string{"-backend", "memory:", "-data-dir", "/x"}, "", true, journal.SyncGroup},
	} {
		o, err := parseOptions(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if o.dataDir != tc.dir || o.volatile != tc.volatile || o.sync != tc.sync {
			t.Errorf("%q: dir %q volatile %v sync %v, want %q %v %v", tc.args, o.dataDir, o.volatile, o.sync, tc.dir, tc.volatile, tc.sync)
		}
		if tc.sync == journal.SyncInterval && o.syncInterval != 20*time.Millisecond {
			t.Errorf("%q: sync interval %v", tc.args, o.syncInterval)
		}
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if o, err := parseOptions(nil, io.Discard); err != nil || o.dataDir != "/home/u/.local/state/coordinated" {
		t.Errorf("without XDG_STATE_HOME: %q, %v", o.dataDir, err)
	}
	for _, args := range [][]string{{"-sync", "always"}, {"-sync", "interval=0s"}, {"-snapshot-bytes", "0"}, {"-backend", "memory:/tmp"}} {
		var stderr bytes.Buffer
		if _, err := parseOptions(args, &stderr); err != errUsage {
			t.Errorf("%q: err %v, want a usage error", args, err)
		}
	}
}

// TestDataSurvivesRestart: what one daemon acknowledged, the next one
// started on the same directory serves; a volatile daemon keeps nothing.
func TestDataSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	addr, logs, stop := startDaemon(t, "-data-dir", dir)
	c, err := cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	call := func(c *cborrpc.Client, method string, params ...any) string {
		t.Helper()
		res, err := c.Call(method, params...)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return fmt.Sprint(res)
	}
	call(c, "set_work_spec", map[string]any{"name": []byte("ws")})
	call(c, "add_work_units", []byte("ws"), []any{cborrpc.Tuple{[]byte("a"), map[string]any{}}, cborrpc.Tuple{[]byte("b"), map[string]any{}}})
	call(c, "get_work", []byte("w"), map[string]any{"lease_time": 300, "max_jobs": 1})
	call(c, "update_work_unit", []byte("ws"), []byte("b"), map[string]any{"status": 4})
	want := call(c, "get_work_units", []byte("ws"), map[string]any{})
	c.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "snapshot written") {
		t.Errorf("a clean stop wrote no snapshot:\n%s", logs)
	}
	if snaps, _ := filepath.Glob(filepath.Join(dir, "snapshot-*.snap")); len(snaps) == 0 {
		t.Errorf("data directory not used: no snapshot in %s", dir)
	}

	addr, logs, stop = startDaemon(t, "-data-dir", dir)
	c, err = cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	if got := call(c, "get_work_units", []byte("ws"), map[string]any{}); got != want {
		t.Errorf("after restart get_work_units = %s, want %s", got, want)
	}
	c.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "memory backend recovered") {
		t.Errorf("no recovery log line:\n%s", logs)
	}

	addr, _, stop = startDaemon(t, "-backend", "memory:")
	c, err = cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	if got := call(c, "list_work_specs", map[string]any{}); got != "[[] <nil>]" {
		t.Errorf("a volatile daemon lists %s", got)
	}
	c.Close()
	stop()
}

// TestCorruptJournalNamesFileAndRecover: damage before the end of the
// journal stops the start with the file named and -recover suggested;
// -recover starts.
func TestCorruptJournalNamesFileAndRecover(t *testing.T) {
	dir := t.TempDir()
	addr, _, stop := startDaemon(t, "-data-dir", dir, "-snapshot-bytes", "1000000000")
	c, err := cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call("set_work_spec", map[string]any{"name": []byte("ws")}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := c.Call("add_work_units", []byte("ws"), []any{cborrpc.Tuple{[]byte(fmt.Sprint(i)), map[string]any{}}}); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	stop()
	// The clean stop wrote a snapshot; damage it.
	snaps, _ := filepath.Glob(filepath.Join(dir, "snapshot-*.snap"))
	if len(snaps) != 1 {
		t.Fatalf("snapshots after a clean stop: %v", snaps)
	}
	data, err := os.ReadFile(snaps[0])
	if err != nil {
		t.Fatal(err)
	}
	data[30] ^= 0x55
	if err := os.WriteFile(snaps[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	err = run(context.Background(), []string{"-listen", "127.0.0.1:0", "-data-dir", dir}, io.Discard, &stderr, nil)
	if err == nil || !strings.Contains(err.Error(), filepath.Base(snaps[0])) || !strings.Contains(err.Error(), "-recover") {
		t.Fatalf("start on a damaged snapshot: %v", err)
	}
	_, logs, stop := startDaemon(t, "-data-dir", dir, "-recover")
	stop()
	if !strings.Contains(logs.String(), "memory backend recovered") {
		t.Fatalf("-recover did not start:\n%s", logs)
	}
}
