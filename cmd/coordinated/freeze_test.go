package main

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/internal/pgtest"
)

// TestFrozenPostgresAnswersNewConnections freezes the daemon's PostgreSQL
// server (SIGSTOP, -postgres-timeout 1s): the daemon keeps accepting
// connections, answers what needs no database at once and everything else
// with an error naming the storage as unavailable, and serves again once
// the server runs. Before, such calls hung for as long as the freeze.
func TestFrozenPostgresAnswersNewConnections(t *testing.T) {
	srv := pgtest.Throwaway(t)
	addr, logs, stop := startDaemon(t, "-backend", srv.URL, "-postgres-timeout", "1s")
	call := func(method string, params ...any) (any, error) {
		c, err := cborrpc.Dial(addr)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		c.Conn().SetDeadline(time.Now().Add(30 * time.Second)) // bounds the test, not the daemon
		return c.Call(method, params...)
	}
	if _, err := call("set_work_spec", map[string]any{"name": []byte("ws")}); err != nil {
		t.Fatal(err)
	}

	srv.Freeze()
	var wg sync.WaitGroup
	for _, m := range []struct {
		method string
		params []any
	}{
		{"get_work", []any{[]byte("w"), map[string]any{}}},
		{"list_work_specs", []any{map[string]any{}}},
		{"count_work_units", []any{[]byte("ws")}},
		{"add_work_units", []any{[]byte("ws"), []any{cborrpc.Tuple{[]byte("u"), map[string]any{}}}}},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := call(m.method, m.params...)
			if err == nil || !strings.Contains(err.Error(), "storage unavailable") {
				t.Errorf("%s on a frozen database: %v, want an error naming the storage as unavailable", m.method, err)
			}
		}()
	}
	if _, err := call("now"); err != nil {
		t.Errorf("now on a new connection while the database is frozen: %v", err)
	}
	wg.Wait()
	srv.Thaw()

	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err = call("list_work_specs", map[string]any{}); err == nil {
			break
		}
	}
	if err != nil {
		t.Errorf("list_work_specs after the thaw: %v", err)
	}
	if !strings.Contains(logs.String(), "postgres backend not ready") || !strings.Contains(logs.String(), "answers again") {
		t.Errorf("the log does not report the database stalling and coming back:\n%s", logs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
