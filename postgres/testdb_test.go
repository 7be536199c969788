package postgres

import (
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/pgtest"
)

// testURL returns the database named by COORDINATE_TEST_POSTGRES, failing
// the test when it is unset.
func testURL(t testing.TB) string { return pgtest.URL(t) }

// freshSchema returns a URL of an empty schema of this test's own, dropped
// when the test ends.
func freshSchema(t testing.TB) string {
	u, _ := pgtest.FreshSchema(t, "test")
	return u
}

// waitFor polls cond until it holds (or fails the test after 5 s).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// openBackend opens a Backend on url, closed when the test ends, and its
// default namespace.
func openBackend(t *testing.T, url string, opts Options) (*Backend, coordinate.Namespace) {
	t.Helper()
	b, err := New(t.Context(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ns, err := b.Namespace(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	return b, ns
}
