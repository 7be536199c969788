package memory

import (
	"context"
	"errors"
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

// A call that fails may still commit something on the way: begin applies
// the expiries due (here the lease of the unit being finished). It must
// return its own error and not hand its wait over, since a held reply is
// built from the journal's outcome alone and would answer success.
func TestFailedUpdateKeepsItsError(t *testing.T) {
	clock := coordinate.NewFakeClock(time.Unix(1e9, 0))
	b, err := Open(context.Background(), Options{
		Clock: clock, StallTimeout: time.Minute, DataDir: t.TempDir(), Sync: journal.SyncGroup,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ns := nsOf(t, b, "ns")
	ctx := context.Background()
	defineSpec(t, ctx, ns, "ws")
	if err := ns.AddWorkUnits(ctx, "ws", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "a"}}, {Key: coordinate.Name{Bytes: "b"}}}); err != nil {
		t.Fatal(err)
	}
	lease := func() coordinate.Attempt {
		t.Helper()
		as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}, LeaseTime: time.Second, WorkSpecs: []string{"ws"}})
		if err != nil || len(as) != 1 {
			t.Fatalf("get_work: %v %v", as, err)
		}
		return as[0]
	}
	finish := coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}
	for _, tc := range []struct {
		name   string
		update func(ctx context.Context, a coordinate.Attempt) error
		want   error
	}{
		{"unknown spec", func(ctx context.Context, _ coordinate.Attempt) error {
			return ns.UpdateWorkUnit(ctx, "nospec", "a", finish)
		}, coordinate.ErrNoSuchWorkSpec},
		{"lease lost to the expiry", func(ctx context.Context, a coordinate.Attempt) error {
			return ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "ws", Key: a.Key.Bytes, ID: a.ID}, finish)
		}, coordinate.ErrLostLease},
	} {
		a := lease()
		clock.Add(2 * time.Second) // the lease is due to expire: the call commits its expiry
		var h replyhold.Hold
		hctx := replyhold.With(ctx, &h)
		replyhold.Allow(hctx)
		err := tc.update(hctx, a)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
		}
		if replyhold.Deferred(hctx) {
			t.Errorf("%s: the failed call handed its wait over", tc.name)
		}
		h.Take()
		u, err := ns.GetWorkUnits(ctx, "ws", []string{string(a.Key.Bytes)})
		if err != nil || len(u) != 1 || u[0].Status != coordinate.StatusAvailable {
			t.Errorf("%s: unit after the call %+v %v, want available (expired)", tc.name, u, err)
		}
	}
}
