package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/pgtest"
	"github.com/coordinated/coordinated/internal/replyhold"
)

// TestFrozenDatabaseFailsCallsInTime freezes the whole PostgreSQL server
// (SIGSTOP) under a backend with a one-second request timeout: every kind
// of call, more of them than the pool has connections, must fail with
// coordinate.ErrUnavailable instead of hanging, the backend must report
// not ready, and once the server runs again it must serve as before.
func TestFrozenDatabaseFailsCallsInTime(t *testing.T) {
	srv := pgtest.Throwaway(t)
	b, ns := openBackend(t, srv.URL, Options{MaxConns: 4, RequestTimeout: time.Second})
	ctx := t.Context()
	def, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns.SetWorkSpec(ctx, def); err != nil {
		t.Fatal(err)
	}
	units := make([]coordinate.WorkUnitInput, 10)
	for i := range units {
		units[i] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("u%d", i), Text: true}, Data: coordinate.EmptyMap}
	}
	if err := ns.AddWorkUnits(ctx, "s", units); err != nil {
		t.Fatal(err)
	}
	worker := coordinate.Name{Bytes: "w", Text: true}
	held, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, MaxJobs: 1, LeaseTime: time.Hour})
	if err != nil || len(held) != 1 {
		t.Fatalf("GetWork before the freeze: %v, %v", held, err)
	}

	srv.Freeze()
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			srv.Thaw()
		}
	}
	defer thaw()

	// Bound the test itself: a call still blocked after this is a failure.
	callCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	calls := map[string]func() error{
		"list_work_specs":  func() error { _, _, err := ns.ListWorkSpecs(callCtx, "", 0); return err },
		"count_work_units": func() error { _, err := ns.CountWorkUnits(callCtx, "s"); return err },
		"add_work_units": func() error {
			return ns.AddWorkUnits(callCtx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "late", Text: true}, Data: coordinate.EmptyMap}})
		},
		"update_work_unit": func() error {
			return ns.UpdateAttempt(callCtx, coordinate.AttemptRef{Spec: "s", Key: held[0].Key.Bytes, ID: held[0].ID},
				coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
		},
		// A held update's callback gets the error (watcher.onStall).
		"held update_work_unit": func() error {
			h := &replyhold.Hold{}
			hctx := replyhold.With(callCtx, h)
			replyhold.Allow(hctx)
			err := ns.UpdateWorkUnit(hctx, "s", held[0].Key.Bytes, coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
			await := h.Take().Await
			if await == nil {
				return fmt.Errorf("not held: %w", err)
			}
			ch := make(chan error, 1)
			await(func(err error) { ch <- err })
			select {
			case err := <-ch:
				return err
			case <-callCtx.Done():
				return callCtx.Err()
			}
		},
	}
	for i := range 6 { // more get_work calls than pool connections
		calls[fmt.Sprintf("get_work %d", i)] = func() error {
			_, err := ns.GetWork(callCtx, coordinate.WorkRequest{Worker: worker, MaxJobs: 1, LeaseTime: time.Hour})
			return err
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := map[string]error{}
	start := time.Now()
	for name, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := call()
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("all %d calls answered %v after the freeze", len(calls), time.Since(start).Round(time.Millisecond))
	for name, err := range errs {
		if !errors.Is(err, coordinate.ErrUnavailable) {
			t.Errorf("%s on a frozen database: %v, want coordinate.ErrUnavailable", name, err)
		}
	}

	if err := b.Ready(callCtx); !errors.Is(err, coordinate.ErrUnavailable) {
		t.Errorf("Ready on a frozen database: %v, want coordinate.ErrUnavailable", err)
	}

	thaw()
	var ready error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ready = b.Ready(ctx); ready == nil {
			break
		}
	}
	if ready != nil {
		t.Fatalf("not ready after the server resumed: %v", ready)
	}
	as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, MaxJobs: 20, LeaseTime: time.Hour})
	if err != nil {
		t.Fatalf("GetWork after the thaw: %v", err)
	}
	counts, err := ns.CountWorkUnits(ctx, "s")
	if err != nil {
		t.Fatalf("CountWorkUnits after the thaw: %v", err)
	}
	// Nothing the frozen calls did may be half applied: the unit held
	// before the freeze is PENDING or FINISHED, the late add is all or
	// nothing, and every other unit was leased now.
	total := counts[coordinate.StatusPending] + counts[coordinate.StatusFinished]
	if len(counts) > 2 || total < 10 || total > 11 || len(as) < 8 {
		t.Errorf("after the thaw: counts %v, GetWork leased %d", counts, len(as))
	}
}
