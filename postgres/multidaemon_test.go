package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// TestTwoDaemonsDrainOneSpec runs two Backends (two daemons) on one
// database with many goroutine workers each draining a shared spec through
// GetWork and UpdateAttempt: no unit may be handed out twice, none may be
// lost, and the finished count must be exact.
func TestTwoDaemonsDrainOneSpec(t *testing.T) {
	const (
		units            = 1500
		workersPerDaemon = 6
	)
	ctx := t.Context()
	url := freshSchema(t)
	var daemons [2]coordinate.Namespace
	for i := range daemons {
		b, err := New(ctx, url, Options{MaxConns: 8})
		if err != nil {
			t.Fatalf("daemon %d: New: %v", i, err)
		}
		t.Cleanup(func() { b.Close() })
		ns, err := b.Namespace(ctx, "")
		if err != nil {
			t.Fatalf("daemon %d: Namespace: %v", i, err)
		}
		daemons[i] = ns
	}
	def, _ := cbor.Marshal(map[string]any{"name": "shared"})
	if _, err := daemons[0].SetWorkSpec(ctx, def); err != nil {
		t.Fatalf("SetWorkSpec: %v", err)
	}
	in := make([]coordinate.WorkUnitInput, units)
	for i := range in {
		in[i] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("u%05d", i), Text: true}, Data: coordinate.EmptyMap}
	}
	if err := daemons[1].AddWorkUnits(ctx, "shared", in); err != nil {
		t.Fatalf("AddWorkUnits: %v", err)
	}

	var (
		mu       sync.Mutex
		holder   = map[string]string{}
		problems []string
		wg       sync.WaitGroup
	)
	report := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for d := range daemons {
		for w := 0; w < workersPerDaemon; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ns := daemons[d]
				id := fmt.Sprintf("d%d-w%d", d, w)
				for {
					as, err := ns.GetWork(ctx, coordinate.WorkRequest{
						Worker: coordinate.Name{Bytes: id, Text: true}, MaxJobs: 1 + w%3, LeaseTime: time.Hour})
					if err != nil {
						report("%s GetWork: %v", id, err)
						return
					}
					if len(as) == 0 {
						return
					}
					for _, a := range as {
						mu.Lock()
						if prev, ok := holder[a.Key.Bytes]; ok {
							problems = append(problems, fmt.Sprintf("%s handed to %s and %s", a.Key.Bytes, prev, id))
						}
						holder[a.Key.Bytes] = id
						mu.Unlock()
						err := ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: a.Spec.Bytes, Key: a.Key.Bytes, ID: a.ID},
							coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
						if err != nil {
							report("%s finishing %s: %v", id, a.Key.Bytes, err)
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	if len(holder) != units {
		t.Errorf("%d distinct units handed out, want %d", len(holder), units)
	}
	for d, ns := range daemons {
		counts, err := ns.CountWorkUnits(context.Background(), "shared")
		if err != nil {
			t.Fatalf("daemon %d CountWorkUnits: %v", d, err)
		}
		if len(counts) != 1 || counts[coordinate.StatusFinished] != units {
			t.Errorf("daemon %d counts = %v, want only %d finished", d, counts, units)
		}
	}
}
