package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// testURL returns the database named by COORDINATE_TEST_POSTGRES, failing
// the test when it is unset: scripts/test.sh always provides one
// (scripts/postgres.sh start DIR makes a throwaway server).
func testURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("COORDINATE_TEST_POSTGRES")
	if u == "" {
		t.Fatal("COORDINATE_TEST_POSTGRES is not set: the postgres backend tests need a database URL " +
			"(start one with: scripts/postgres.sh start DIR)")
	}
	return u
}

// freshSchema creates an empty schema for one test and returns a URL whose
// connections use it, so every test gets an empty database of its own.
// The schema is dropped when the test ends.
func freshSchema(t testing.TB) string {
	t.Helper()
	base := testURL(t)
	schema := fmt.Sprintf("test_%d_%x", os.Getpid(), rand.Uint64())
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to COORDINATE_TEST_POSTGRES: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse COORDINATE_TEST_POSTGRES: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
