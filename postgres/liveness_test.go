package postgres

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// TestLongWorkOutlivesTheWatch: work that takes many request timeouts on a
// database that answers is not cut short. The watch's own connection is
// opened first: connecting is not what this test is about, and under the
// test command's load a fresh connection can take longer than the ping's
// budget (half the request timeout).
func TestLongWorkOutlivesTheWatch(t *testing.T) {
	b, _ := openBackend(t, freshSchema(t), Options{RequestTimeout: 400 * time.Millisecond})
	if err := b.live.pingConn(t.Context()); err != nil {
		t.Fatalf("opening the watch's connection: %v", err)
	}
	ctx, end := b.live.watch(t.Context())
	_, err := b.pool.Exec(ctx, "SELECT pg_sleep(2)")
	if err = end(err); err != nil {
		t.Fatalf("a two-second statement under a 400 ms request timeout: %v", err)
	}
}

// TestStallReachesAReturnedCall: a call that returned before its work
// ended (a held update) hears from its watch when the database stops
// answering (onStall), whether it asks before or after the watch found
// out, and ending the watch then reports coordinate.ErrUnavailable, as
// for a call that waited. No database is needed: the ping's connection
// is refused.
func TestStallReachesAReturnedCall(t *testing.T) {
	cfg, err := pgx.ParseConfig("postgres://postgres@127.0.0.1:1/none?connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	l := newLiveness(cfg, 100*time.Millisecond, slog.New(slog.DiscardHandler))
	defer l.close()
	for _, late := range []bool{false, true} {
		ctx, w := l.watchCall(context.Background())
		stalled := make(chan struct{})
		if late {
			<-ctx.Done() // the watch has cut the work short already
		}
		w.onStall(func() { close(stalled) })
		select {
		case <-stalled:
		case <-time.After(30 * time.Second): // bounds the test, not the code
			t.Fatalf("late %v: onStall's function was never called", late)
		}
		if err := w.finish(ctx.Err()); !errors.Is(err, coordinate.ErrUnavailable) {
			t.Errorf("late %v: the watch ended with %v, want coordinate.ErrUnavailable", late, err)
		}
	}
	var none *watcher // no watch: nothing happens, errors pass through
	none.onStall(func() { t.Error("onStall of no watch called its function") })
	if err := none.finish(context.Canceled); err != context.Canceled {
		t.Errorf("finish of no watch: %v", err)
	}
}

// TestAbandonedClaimIsReleased: units a claim leased for a caller that
// gave up before the commit answered are made available again.
func TestAbandonedClaimIsReleased(t *testing.T) {
	b, ns := openBackend(t, freshSchema(t), Options{})
	ctx := t.Context()
	def, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns.SetWorkSpec(ctx, def); err != nil {
		t.Fatal(err)
	}
	if err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "u", Text: true}, Data: coordinate.EmptyMap}}); err != nil {
		t.Fatal(err)
	}
	as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}, MaxJobs: 1, LeaseTime: time.Hour})
	if err != nil || len(as) != 1 {
		t.Fatalf("GetWork: %v, %v", as, err)
	}
	// The committer answers a claim whose submitter already gave up.
	it := &commitItem{claim: &claimRequest{ns: ns.(*watchedNamespace).ns, attempts: as}, done: make(chan error, 1)}
	it.state.Store(itemAbandoned)
	b.commits.answer(it, nil)
	var st coordinate.Status
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		us, err := ns.GetWorkUnits(context.Background(), "s", []string{"u"})
		if err != nil {
			t.Fatal(err)
		}
		if st = us[0].Status; st == coordinate.StatusAvailable {
			return
		}
	}
	t.Errorf("unit of an abandoned claim is %v, want available", st)
}

// BenchmarkWatch is what the liveness watch adds to every call when the
// database answers: no database round trip is needed to measure it.
func BenchmarkWatch(b *testing.B) {
	l := newLiveness(nil, DefaultRequestTimeout, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, end := l.watch(ctx)
		if err := end(nil); err != nil {
			b.Fatal(err)
		}
	}
}
