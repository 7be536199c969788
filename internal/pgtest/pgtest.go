// Package pgtest gives tests an empty PostgreSQL schema of their own in the
// server named by COORDINATE_TEST_POSTGRES. scripts/test.sh always starts
// a throwaway server and sets it, so a test that needs the database fails
// (never skips) when it is missing.
package pgtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the variable holding the test server's URL.
const EnvVar = "COORDINATE_TEST_POSTGRES"

// URL returns the test server's URL, failing the test when it is unset.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvVar)
	if u == "" {
		t.Fatal(EnvVar + " is not set: this test needs a PostgreSQL URL " +
			"(scripts/test.sh sets one; or start a server with: scripts/postgres.sh start DIR)")
	}
	return u
}

// FreshSchema creates an empty schema named prefix_<pid>_<random>, drops it
// when the test ends, and returns a URL whose connections use it (as their
// search_path, and as their application_name so a test can find its own
// sessions in pg_stat_activity), together with the schema's name.
func FreshSchema(t testing.TB, prefix string) (dbURL, schema string) {
	t.Helper()
	base := URL(t)
	schema = fmt.Sprintf("%s_%d_%x", prefix, os.Getpid(), rand.Uint64())
	ctx := context.Background()
	if err := exec(ctx, base, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := exec(ctx, base, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", EnvVar, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()
	return u.String(), schema
}

func exec(ctx context.Context, dbURL, sql string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", EnvVar, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}
