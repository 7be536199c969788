package main

import (
	"fmt"
	"testing"

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
