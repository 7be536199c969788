package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/replyhold"
)

// heldCall calls update with a request context as cborrpc makes one for
// update_work_unit (a hold the handler allows) and returns what update
// returned and, when it deferred, the channel the reply's callback sends
// its outcome to.
func heldCall(t *testing.T, update func(ctx context.Context) error) (error, <-chan error) {
	t.Helper()
	h := &replyhold.Hold{}
	ctx := replyhold.With(t.Context(), h)
	replyhold.Allow(ctx)
	err := update(ctx)
	await := h.Take().Await
	if await == nil {
		return err, nil
	}
	if err != nil {
		t.Errorf("a deferred update returned %v", err)
	}
	ch := make(chan error, 2) // room for a wrong second call
	await(func(err error) { ch <- err })
	return nil, ch
}

// mustHold calls update as heldCall does, requires it to defer, and
// returns the outcome its callback gets.
func mustHold(t *testing.T, update func(ctx context.Context) error) error {
	t.Helper()
	err, ch := heldCall(t, update)
	if ch == nil {
		t.Fatalf("the update was not held: it returned %v", err)
	}
	return outcome(t, ch)
}

// outcome waits for a held update's outcome, failing the test if none
// comes.
func outcome(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(30 * time.Second): // bounds the test, not the code
		t.Fatal("the held update's callback was never called")
		return nil
	}
}

// TestHeldUpdateOutcomes: an update whose request lets its reply be held
// returns at once, and its callback gets what the update would have
// returned had it waited: nil once it is committed, the same lost-lease,
// no-such-unit and no-such-spec errors (so jobserver builds the same
// replies from them). An update that is not valid is refused at once,
// without holding anything.
func TestHeldUpdateOutcomes(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.spec(map[string]any{"name": "s"})
	e.add("s", unit("a", map[string]any{}), unit("b", map[string]any{}))
	as := e.claim("s", 2)

	if err := mustHold(t, func(ctx context.Context) error {
		return e.ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "s", Key: as[0].Key.Bytes, ID: as[0].ID}, finish)
	}); err != nil {
		t.Errorf("held finish: %v", err)
	}
	if st := e.status("s", as[0].Key.Bytes); st != coordinate.StatusFinished {
		t.Errorf("%s after its held finish is %v, want finished", as[0].Key.Bytes, st)
	}

	stale := coordinate.AttemptRef{Spec: "s", Key: as[1].Key.Bytes, ID: as[1].ID + 1000}
	for _, c := range []struct {
		name   string
		update func(ctx context.Context) error
		want   error
	}{
		{"stale lease", func(ctx context.Context) error { return e.ns.UpdateAttempt(ctx, stale, finish) }, coordinate.ErrLostLease},
		{"no such unit", func(ctx context.Context) error { return e.ns.UpdateWorkUnit(ctx, "s", "nope", finish) }, coordinate.ErrNoSuchWorkUnit},
		{"no such spec", func(ctx context.Context) error { return e.ns.UpdateWorkUnit(ctx, "nope", "a", finish) }, coordinate.ErrNoSuchWorkSpec},
	} {
		held := mustHold(t, c.update)
		waited := c.update(ctx)
		if !errors.Is(held, c.want) || waited == nil || held.Error() != waited.Error() {
			t.Errorf("%s: held %v, waiting %v; want both %v, the same", c.name, held, waited, c.want)
		}
	}
	if st := e.status("s", as[1].Key.Bytes); st != coordinate.StatusPending {
		t.Errorf("%s after finishes with a stale lease is %v, want pending", as[1].Key.Bytes, st)
	}

	err, ch := heldCall(t, func(ctx context.Context) error {
		return e.ns.UpdateWorkUnit(ctx, "s", "b", coordinate.WorkUnitUpdate{Status: 99})
	})
	if ch != nil || err == nil {
		t.Errorf("invalid update: returned %v, held %v; want an error at once", err, ch != nil)
	}
}

// blockCommitter keeps the committer's workers from committing anything
// until the returned function is called: it locks unit key of spec in a
// transaction of its own, lets one worker's batch wait for that lock
// (an update of the unit, whose error goes to the test), and waits until
// the committer counts that batch in flight. The other worker then only
// gathers requests (committer.gather waits for busyMinBatch or for the
// batch in flight to end).
func blockCommitter(t *testing.T, e *fastEnv, spec, key string) (release func()) {
	t.Helper()
	ctx := t.Context()
	tx, err := e.b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := tx.QueryRow(ctx, "SELECT 1 FROM work_unit WHERE key = $1 FOR UPDATE", []byte(key)).Scan(&one); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() { blocked <- e.ns.UpdateWorkUnit(context.WithoutCancel(ctx), spec, key, finish) }()
	waitFor(t, "a batch in flight", func() bool { return e.b.commits.busy.Load() == 1 })
	return sync.OnceFunc(func() {
		if err := tx.Rollback(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			t.Error(err)
		}
		if err := <-blocked; err != nil {
			t.Errorf("the update that blocked the committer: %v", err)
		}
	})
}

// TestHeldUpdateOwnsItsData: a held update is applied after its call
// returned, when the server has reused the request's memory for the
// next request: what it stores is what the call was given, whatever
// happens later to the data, lease time and worker it pointed to.
func TestHeldUpdateOwnsItsData(t *testing.T) {
	e := newFastEnv(t)
	e.spec(map[string]any{"name": "s"})
	e.add("s", unit("a", map[string]any{}), unit("b", map[string]any{}), unit("z", map[string]any{}))
	as := e.claim("s", 2)
	release := blockCommitter(t, e, "s", "z")
	defer release()

	sent := map[string]any{"result": "kept"}
	finishData, _ := cbor.Marshal(sent)
	renewData, _ := cbor.Marshal(sent)
	lease, worker := 10*time.Minute, coordinate.Name{Bytes: "w2", Text: true}
	err1, ch1 := heldCall(t, func(ctx context.Context) error {
		return e.ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "s", Key: as[0].Key.Bytes, ID: as[0].ID},
			coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished, Data: finishData})
	})
	err2, ch2 := heldCall(t, func(ctx context.Context) error {
		return e.ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "s", Key: as[1].Key.Bytes, ID: as[1].ID},
			coordinate.WorkUnitUpdate{Status: coordinate.StatusPending, LeaseTime: &lease, Worker: &worker, Data: renewData})
	})
	if ch1 == nil || ch2 == nil {
		t.Fatalf("the updates were not held: %v, %v", err1, err2)
	}
	// The next request overwrites the first one's memory.
	evil, _ := cbor.Marshal(map[string]any{"result": "evil"})
	copy(finishData, evil)
	copy(renewData, evil)
	lease, worker = time.Second, coordinate.Name{Bytes: "w3", Text: true}

	release()
	if err := outcome(t, ch1); err != nil {
		t.Errorf("held finish: %v", err)
	}
	if err := outcome(t, ch2); err != nil {
		t.Errorf("held renewal: %v", err)
	}
	us, err := e.ns.GetWorkUnits(t.Context(), "s", []string{as[0].Key.Bytes, as[1].Key.Bytes})
	if err != nil || len(us) != 2 {
		t.Fatalf("GetWorkUnits: %v, %v", us, err)
	}
	want, _ := cbor.Marshal(sent)
	for _, u := range us {
		if string(u.Data) != string(want) {
			t.Errorf("%s stored data %x, want the data sent %x", u.Key.Bytes, u.Data, want)
		}
	}
	renewed := us[1]
	if renewed.Key.Bytes != as[1].Key.Bytes {
		renewed = us[0]
	}
	if wantExp := e.clock.Now().Add(10 * time.Minute); renewed.Worker == nil || renewed.Worker.Bytes != "w2" || !renewed.Expiration.Equal(wantExp) {
		t.Errorf("renewed unit: worker %v, expires %v; want w2 and %v", renewed.Worker, renewed.Expiration, wantExp)
	}
}

// TestHeldAnswerEitherOrder: the committer may answer a held update
// before or after cborrpc registers the reply's callback (it does so only
// once the handler has returned); either way the callback is called
// exactly once, with the answer. A second outcome (the liveness watch's
// and then the committer's) changes nothing.
func TestHeldAnswerEitherOrder(t *testing.T) {
	c := &committer{}
	for i := range 2000 {
		it := &commitItem{upd: &updateRequest{}}
		it.held.on = true
		want := fmt.Errorf("outcome %d", i)
		var calls atomic.Int32
		var got error
		var wg sync.WaitGroup
		wg.Add(2)
		answer := func() { defer wg.Done(); c.answer(it, want); c.answer(it, errors.New("second")) }
		await := func() {
			defer wg.Done()
			it.await(func(err error) { calls.Add(1); got = err })
		}
		switch i % 3 {
		case 0: // answered first
			answer()
			await()
		case 1: // awaited first
			await()
			answer()
		default:
			go answer()
			go await()
		}
		wg.Wait()
		if n := calls.Load(); n != 1 || got != want {
			t.Fatalf("round %d: callback called %d times, last with %v; want once with %v", i, n, got, want)
		}
	}
}

// TestHeldUpdatesAnsweredAtClose: held updates gathered or still queued
// when the backend closes are each answered once: applied, or failed
// with the closed backend's error. One made after the close is refused
// at once or answered so, never left waiting.
func TestHeldUpdatesAnsweredAtClose(t *testing.T) {
	b, err := New(t.Context(), freshSchema(t), Options{MaxConns: 4}) // closed below, once
	if err != nil {
		t.Fatal(err)
	}
	ns, err := b.Namespace(t.Context(), "")
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	e := &fastEnv{t: t, b: b, ns: ns}
	e.spec(map[string]any{"name": "s"})
	e.add("s", unit("a", map[string]any{}), unit("z", map[string]any{}))
	release := blockCommitter(t, e, "s", "z")
	defer release()

	// More than a batch holds: some stay queued behind the gathered ones.
	const n = maxCommitBatch + 100
	calls := make([]atomic.Int32, n)
	outcomes := make([]error, n)
	for i := range n {
		h := &replyhold.Hold{}
		ctx := replyhold.With(t.Context(), h)
		replyhold.Allow(ctx)
		if err := e.ns.UpdateWorkUnit(ctx, "s", "a", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable}); err != nil {
			t.Fatalf("held update %d: %v", i, err)
		}
		await := h.Take().Await
		if await == nil {
			t.Fatalf("update %d was not held", i)
		}
		await(func(err error) { calls[i].Add(1); outcomes[i] = err })
	}
	closed := make(chan struct{})
	go func() { e.b.Close(); close(closed) }()
	<-e.b.commits.stop
	release() // the batch in flight ends; the committer's workers stop
	select {
	case <-closed:
	case <-time.After(30 * time.Second): // bounds the test, not the code
		t.Fatal("Close did not return")
	}
	applied := 0
	for i := range n {
		c, err := calls[i].Load(), outcomes[i]
		if c != 1 || (err != nil && !errors.Is(err, errBackendClosed)) {
			t.Fatalf("held update %d: callback called %d times, last with %v; want once with nil or %v", i, c, err, errBackendClosed)
		}
		if err == nil {
			applied++
		}
	}
	t.Logf("%d of %d held updates applied before the close, the rest failed", applied, n)

	for range 50 {
		err, ch := heldCall(t, func(ctx context.Context) error { return e.ns.UpdateWorkUnit(ctx, "s", "a", finish) })
		if ch != nil {
			err = outcome(t, ch)
		}
		if !errors.Is(err, errBackendClosed) {
			t.Fatalf("held update after Close: %v, want %v", err, errBackendClosed)
		}
	}
}
