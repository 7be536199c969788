package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/internal/pgtest"
)

// TestDaemonOnPostgres starts the daemon with -backend set to the database
// named by COORDINATE_TEST_POSTGRES (scripts/test.sh always starts one), in
// a schema of its own.
func TestDaemonOnPostgres(t *testing.T) {
	dbURL, _ := pgtest.FreshSchema(t, "cmd_test")
	addr, logs, stop := startDaemon(t, "-backend", dbURL)
	c, err := cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	steps := []struct {
		method string
		params []any
		want   string
	}{
		{"set_work_spec", []any{map[string]any{"name": []byte("ws")}}, "[true <nil>]"},
		{"add_work_units", []any{[]byte("ws"), []any{cborrpc.Tuple{[]byte("u"), map[string]any{}}}}, "[true <nil>]"},
		{"get_work", []any{[]byte("w"), map[string]any{"max_jobs": 1}}, "[[[119 115] [117] map[]] <nil>]"},
		{"update_work_unit", []any{[]byte("ws"), []byte("u"), map[string]any{"status": 4}}, "[true <nil>]"},
		{"count_work_units", []any{[]byte("ws")}, "[map[4:1] <nil>]"},
	}
	for _, s := range steps {
		res, err := c.Call(s.method, s.params...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", s.method, err, logs.String())
		}
		if got := fmt.Sprint(res); got != s.want {
			t.Errorf("%s = %s, want %s", s.method, got, s.want)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestLongPollWokenByAnotherDaemon: two daemons share one database; a
// get_work waiting (option `wait`) on the first is answered with the unit
// that a client of the second adds, long before its wait ends (without
// the wake-up across daemons it would be found only at the end of the
// wait, 30 s later).
func TestLongPollWokenByAnotherDaemon(t *testing.T) {
	dbURL, _ := pgtest.FreshSchema(t, "cmd_test")
	waitAddr, waitLogs, stopWait := startDaemon(t, "-backend", dbURL)
	addAddr, addLogs, stopAdd := startDaemon(t, "-backend", dbURL)
	waiter, err := cborrpc.Dial(waitAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	adder, err := cborrpc.Dial(addAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer adder.Close()
	if _, err := adder.Call("set_work_spec", map[string]any{"name": []byte("ws")}); err != nil {
		t.Fatal(err)
	}

	const wait = 30 * time.Second
	type answer struct {
		res     any
		err     error
		elapsed time.Duration
	}
	got := make(chan answer, 1)
	go func() {
		start := time.Now()
		res, err := waiter.Call("get_work", []byte("w"), map[string]any{"max_jobs": 1, "wait": int(wait.Seconds())})
		got <- answer{res, err, time.Since(start)}
	}()
	// Add units until the waiting call answers: the first adds may come
	// before the second daemon has heard that the first one waits.
	adds := 0
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var a answer
loop:
	for {
		select {
		case a = <-got:
			break loop
		case <-tick.C:
			if adds < 10 {
				key := fmt.Sprintf("u%d", adds)
				if _, err := adder.Call("add_work_units", []byte("ws"), []any{cborrpc.Tuple{[]byte(key), map[string]any{}}}); err != nil {
					t.Fatal(err)
				}
				adds++
			}
		}
	}
	if a.err != nil {
		t.Fatalf("get_work: %v\n%s\n%s", a.err, waitLogs.String(), addLogs.String())
	}
	if got := fmt.Sprint(a.res); !strings.HasPrefix(got, "[[[119 115] [117 48]") {
		t.Errorf("get_work = %s, want the first unit added (ws/u0)", got)
	}
	if a.elapsed >= wait {
		t.Errorf("get_work answered after %v, at the end of its wait: the other daemon's add did not wake it", a.elapsed)
	}
	for _, stop := range []func() error{stopWait, stopAdd} {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
}
