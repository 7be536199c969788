package postgres

import (
	"testing"

	"coordinated/internal/pgtest"
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
