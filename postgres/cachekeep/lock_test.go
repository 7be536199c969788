package cachekeep

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coordinated/coordinated/internal/pgtest"
)

// Unlock releases a session lock taken on the same connection, so another
// session can take it.
func TestUnlockReleasesSessionLock(t *testing.T) {
	ctx := t.Context()
	url, _ := pgtest.FreshSchema(t, "cachekeep")
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	const key = 0x636f6f7274 // "coort", a key of this test's own
	a, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	tryLock := func(c *pgxpool.Conn) bool {
		t.Helper()
		var ok bool
		if err := c.QueryRow(ctx, tryLockSQL, int64(key)).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !tryLock(a) {
		t.Fatal("a fresh key is taken")
	}
	if tryLock(b) {
		t.Fatal("a second session took a held lock")
	}
	if err := Unlock(ctx, a, key); err != nil {
		t.Fatal(err)
	}
	if !tryLock(b) {
		t.Fatal("after Unlock, another session cannot take the lock")
	}
	if err := Unlock(ctx, b, key); err != nil {
		t.Fatal(err)
	}
}
