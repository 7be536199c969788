package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"coordinated/cborrpc"
)

// TestDaemonOnPostgres starts the daemon with -backend set to the database
// named by COORDINATE_TEST_POSTGRES (scripts/test.sh always starts one), in
// a schema of its own.
func TestDaemonOnPostgres(t *testing.T) {
	base := os.Getenv("COORDINATE_TEST_POSTGRES")
	if base == "" {
		t.Skip("COORDINATE_TEST_POSTGRES is not set (scripts/postgres.sh start DIR prints one)")
	}
	ctx := context.Background()
	schema := fmt.Sprintf("cmd_test_%x", rand.Uint64())
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()

	addr, logs, stop := startDaemon(t, "-backend", u.String())
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
