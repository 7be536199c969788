package memory

import (
	"context"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/replyhold"
	"github.com/coordinated/coordinated/journal"
)

// An update whose request allows its reply to be held returns before its
// record is durable and hands the wait over (internal/replyhold): the
// callback reports the record durable, and the update survives a crash
// right after. A request that does not allow it waits as before.
func TestUpdateHandsItsWaitOver(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(context.Background(), Options{
		Clock: coordinate.NewFakeClock(time.Unix(1e9, 0)), StallTimeout: time.Minute, DataDir: dir,
		Sync: journal.SyncGroup,
	})
	if err != nil {
		t.Fatal(err)
	}
	ns := nsOf(t, b, "ns")
	ctx := context.Background()
	defineSpec(t, ctx, ns, "ws")
	if err := ns.AddWorkUnits(ctx, "ws", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "a"}}, {Key: coordinate.Name{Bytes: "b"}}}); err != nil {
		t.Fatal(err)
	}

	var h replyhold.Hold
	hctx := replyhold.With(ctx, &h)
	if err := ns.UpdateWorkUnit(hctx, "ws", "a", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		t.Fatal(err)
	}
	if h.Take().Await != nil {
		t.Fatal("a request that did not allow it had its wait handed over")
	}

	replyhold.Allow(hctx)
	if err := ns.UpdateWorkUnit(hctx, "ws", "b", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		t.Fatal(err)
	}
	if !replyhold.Deferred(hctx) {
		t.Fatal("an update that allowed it waited for its record")
	}
	await := h.Take().Await
	outcome := make(chan error, 1)
	await(func(err error) { outcome <- err })
	select {
	case err := <-outcome:
		if err != nil {
			t.Fatalf("outcome = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held update's callback never ran")
	}
	crash(t, b)

	b2 := openPersistent(t, dir, coordinate.NewFakeClock(time.Unix(1e9, 0)), 0)
	defer b2.Close()
	units, err := nsOf(t, b2, "ns").GetWorkUnits(ctx, "ws", []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range units {
		if u.Status != coordinate.StatusFinished {
			t.Errorf("unit %s after the crash: %v, want finished", u.Key.Bytes, u.Status)
		}
	}
}

// Under -sync none and interval a round costs no sync: updates wait as
// before, the flusher does not write their replies.
func TestNoHeldRepliesWithoutGroupSync(t *testing.T) {
	for _, policy := range []journal.SyncPolicy{journal.SyncNone, journal.SyncInterval} {
		b, err := Open(context.Background(), Options{
			Clock: coordinate.NewFakeClock(time.Unix(1e9, 0)), StallTimeout: time.Minute, DataDir: t.TempDir(),
			Sync: policy, SyncInterval: time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		ns := nsOf(t, b, "ns")
		ctx := context.Background()
		defineSpec(t, ctx, ns, "ws")
		if err := ns.AddWorkUnits(ctx, "ws", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "a"}}}); err != nil {
			t.Fatal(err)
		}
		var h replyhold.Hold
		hctx := replyhold.With(ctx, &h)
		replyhold.Allow(hctx)
		if err := ns.UpdateWorkUnit(hctx, "ws", "a", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
			t.Fatal(err)
		}
		if replyhold.Deferred(hctx) {
			t.Errorf("sync policy %v: the update handed its wait over", policy)
		}
		b.Close()
	}
}
