package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// TestMaxRunningAcrossDaemons races workers of three Backends (three
// daemons) on one database for a spec with max_running 1: no two units may
// ever be held at once, and every unit must be finished exactly once.
func TestMaxRunningAcrossDaemons(t *testing.T) {
	const (
		units            = 60
		daemons          = 3
		workersPerDaemon = 4
	)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	url := freshSchema(t)
	nss := make([]coordinate.Namespace, daemons)
	for i := range nss {
		_, nss[i] = openBackend(t, url, Options{MaxConns: 6})
	}
	def, _ := cbor.Marshal(map[string]any{"name": "licensed", "max_running": 1})
	if _, err := nss[0].SetWorkSpec(ctx, def); err != nil {
		t.Fatalf("SetWorkSpec: %v", err)
	}
	if err := nss[1].AddWorkUnits(ctx, "licensed", numbered(units)); err != nil {
		t.Fatalf("AddWorkUnits: %v", err)
	}

	var (
		held, most, finished atomic.Int64
		wg                   sync.WaitGroup
	)
	report := func(format string, args ...any) { // t.Errorf is safe from any goroutine
		t.Errorf(format, args...)
		cancel()
	}
	for d := range nss {
		for w := range workersPerDaemon {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("d%d-w%d", d, w)
				for finished.Load() < units && ctx.Err() == nil {
					as, err := nss[d].GetWork(ctx, coordinate.WorkRequest{
						Worker: coordinate.Name{Bytes: id, Text: true}, MaxJobs: 2, LeaseTime: time.Hour})
					if err != nil {
						report("%s GetWork: %v", id, err)
						return
					}
					if len(as) == 0 {
						time.Sleep(time.Millisecond)
						continue
					}
					n := held.Add(int64(len(as)))
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(time.Millisecond) // hold the units a moment, as a worker would
					held.Add(-int64(len(as)))
					for _, a := range as {
						err := nss[d].UpdateAttempt(ctx, coordinate.AttemptRef{Spec: a.Spec.Bytes, Key: a.Key.Bytes, ID: a.ID},
							coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
						if err != nil {
							report("%s finishing %s: %v", id, a.Key.Bytes, err)
							return
						}
						finished.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("at most %d units were held at once, want 1 (max_running: 1)", m)
	}
	counts, err := nss[2].CountWorkUnits(context.Background(), "licensed")
	if err != nil {
		t.Fatalf("CountWorkUnits: %v", err)
	}
	if len(counts) != 1 || counts[coordinate.StatusFinished] != units {
		t.Errorf("counts = %v, want only %d finished", counts, units)
	}
}
