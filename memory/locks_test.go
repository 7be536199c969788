package memory

import (
	"context"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// A lock renewed over and over keeps the expiry heap small: each renewal
// leaves the previous entry stale until its own deadline, and the heap is
// rebuilt from the locks held once stale entries outnumber them (it held
// 200,001 entries for one lock renewed 200,000 times). The lock still
// expires at its last deadline.
func TestLockExpiryHeapStaysSmall(t *testing.T) {
	clock := coordinate.NewFakeClock(time.Unix(1e9, 0))
	b := New(Options{Clock: clock})
	defer b.Close()
	ctx := context.Background()
	nsi, err := b.Namespace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ns := nsi.(*namespace)
	owner := coordinate.Name{Bytes: "me", Text: true}
	paths := []coordinate.LockPath{coordinate.NewLockPath("x")}
	if _, refused, err := ns.LockPaths(ctx, owner, time.Hour, paths, true); err != nil || refused >= 0 {
		t.Fatalf("lock: %d %v", refused, err)
	}
	for range 10000 {
		if i, _, err := ns.RenewLocks(ctx, owner, time.Hour, paths); err != nil || i >= 0 {
			t.Fatalf("renew: %d %v", i, err)
		}
	}
	if n := len(ns.locks.expiry); n > 2*len(ns.locks.locks)+65 {
		t.Errorf("expiry heap holds %d entries for %d lock", n, len(ns.locks.locks))
	}
	clock.Add(59 * time.Minute)
	if held, err := ns.ReadLocks(ctx, paths); err != nil || held[0] == nil {
		t.Fatalf("before its deadline: %v %v", held, err)
	}
	clock.Add(2 * time.Minute)
	if held, err := ns.ReadLocks(ctx, paths); err != nil || held[0] != nil {
		t.Errorf("after its deadline: %v %v", held, err)
	}
}
