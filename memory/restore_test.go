package memory

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// randomSnapshot encodes two namespaces after random workloads and
// returns the snapshot and their dumps.
func randomSnapshot(t *testing.T, seed uint64) ([]byte, map[string]string) {
	t.Helper()
	var nss []*capturedNamespace
	want := map[string]string{}
	for i, name := range []string{"", "x"} {
		clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		ns := newNamespace(name, Options{Clock: clock, StallTimeout: time.Minute})
		randomWorkload(t, ns, clock, rand.New(rand.NewPCG(seed, uint64(i))), 1500)
		nss = append(nss, captureNamespace(ns))
		want[name] = dump(ns.st)
	}
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, nss, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), want
}

// loadAll runs loadParallel on snap, returning the dumps of the states
// built.
func loadAll(t *testing.T, snap []byte, batch int) (map[string]string, error) {
	t.Helper()
	got := map[string]string{}
	err := loadParallel(bytes.NewReader(snap), int64(len(snap)), nil, batch, false, func(name string, st *state, dropped []coordinate.UnitRef) error {
		checkInvariants(t, st)
		if len(dropped) != 0 {
			t.Errorf("namespace %q: %d units dropped", name, len(dropped))
		}
		got[name] = dump(st)
		return nil
	})
	return got, err
}

// TestLoadParallelMatchesSequential: recovery's pipelined load (decoding
// on one goroutine, building on another, in batches of any size) builds
// exactly the states the sequential readSnapshot + restore builds, heap
// layouts included, and both are the captured states.
func TestLoadParallelMatchesSequential(t *testing.T) {
	for seed := range uint64(4) {
		snap, want := randomSnapshot(t, seed)
		seq, err := readSnapshot(bytes.NewReader(snap), int64(len(snap)), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range seq {
			st, err := c.restore()
			if err != nil {
				t.Fatal(err)
			}
			if got := dump(st); got != want[c.name] {
				t.Fatalf("seed %d: sequential restore of %q differs:\n%s\n---\n%s", seed, c.name, got, want[c.name])
			}
		}
		for _, batch := range []int{1, 7, loadBatch} {
			got, err := loadAll(t, snap, batch)
			if err != nil {
				t.Fatalf("seed %d batch %d: %v", seed, batch, err)
			}
			if len(got) != len(want) {
				t.Fatalf("seed %d batch %d: %d namespaces, want %d", seed, batch, len(got), len(want))
			}
			for name, w := range want {
				if got[name] != w {
					t.Fatalf("seed %d batch %d: namespace %q differs:\n%s\n---\n%s", seed, batch, name, got[name], w)
				}
			}
		}
	}
}

// TestLoadParallelErrors: damage found by the decoder (a cut) or by the
// builder (a unit listed twice, an error from done) fails the load, the
// decoding goroutine stops even while it is blocked handing out batches,
// and a snapshot is never reported loaded in part.
func TestLoadParallelErrors(t *testing.T) {
	snap, _ := randomSnapshot(t, 9)
	for _, cut := range []int{len(snap) - 1, len(snap) / 2, len(snap) / 7, 10} {
		if _, err := loadAll(t, snap[:cut], 1); err == nil || !strings.Contains(err.Error(), "reading snapshot") {
			t.Errorf("cut at %d of %d: err %v, want a reading error", cut, len(snap), err)
		}
	}
	if _, err := loadAll(t, append(bytes.Clone(snap), 0), 5); err == nil {
		t.Error("data after the last namespace: no error")
	}

	// A unit listed twice, early, while many batches are still to come.
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ns := newNamespace("d", Options{Clock: clock, StallTimeout: time.Minute})
	randomWorkload(t, ns, clock, rand.New(rand.NewPCG(1, 1)), 1500)
	c := captureNamespace(ns)
	c.units[1].key = c.units[0].key
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, []*capturedNamespace{c}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := loadAll(t, buf.Bytes(), 1); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Errorf("unit listed twice: err %v", err)
	}

	stop := errors.New("stop here")
	calls := 0
	err := loadParallel(bytes.NewReader(snap), int64(len(snap)), nil, 1, false, func(string, *state, []coordinate.UnitRef) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("done failing: err %v after %d calls, want %v after 1", err, calls, stop)
	}
}
