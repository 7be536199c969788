package postgres

import (
	"fmt"
	"sync"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// TestPrioritizeRacesAdd: prioritize_work_units locks the units it
// changes and then the spec's row (widening its priority bounds), while
// add_work_units inserting a new unit that widens them locks the spec's
// row first and then the existing units it re-adds. Run at once on two
// daemons they deadlock, and PostgreSQL kills one; the caller must not
// see that as an error.
func TestPrioritizeRacesAdd(t *testing.T) {
	url := freshSchema(t)
	ctx := t.Context()
	_, ns1 := openBackend(t, url, Options{MaxConns: 4})
	_, ns2 := openBackend(t, url, Options{MaxConns: 4})
	raw, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns1.SetWorkSpec(ctx, raw); err != nil {
		t.Fatal(err)
	}
	e := coordinate.WorkUnitInput{Key: textName("e"), Data: coordinate.EmptyMap}
	if err := ns1.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{e}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range n {
			p := float64(-1 - i) // below every priority so far: widens the bounds
			in := []coordinate.WorkUnitInput{{Key: textName(fmt.Sprintf("n%04d", i)), Data: coordinate.EmptyMap, Priority: &p}, e}
			if err := ns1.AddWorkUnits(ctx, "s", in); err != nil {
				errs <- fmt.Errorf("add %d: %w", i, err)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := range n {
			p := float64(1 + i) // above every priority so far
			if _, err := ns2.PrioritizeWorkUnits(ctx, "s", []string{"e"}, &p, 0); err != nil {
				errs <- fmt.Errorf("prioritize %d: %w", i, err)
			}
		}
	}()
	wg.Wait()
	close(errs)
	k := 0
	for err := range errs {
		if k < 3 {
			t.Error(err)
		}
		k++
	}
	if k > 0 {
		t.Errorf("%d calls failed", k)
	}
}
