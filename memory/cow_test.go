package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// TestSnapshotDuringChanges takes snapshots, copying three units per lock
// hold, while a random workload changes the namespace between the holds
// (ten calls between each two holds);
// after each one, it plus the journal after it must give exactly the
// live state (recovering a copy of the directory), so every snapshot held
// the state of its boundary (a unit missed, doubled or captured after its change would
// show, and a unit count that does not add up fails the snapshot).
func TestSnapshotDuringChanges(t *testing.T) {
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 1<<40)
	b.wal.captureChunk = 3
	b.wal.deltaShare = 2
	ns := nsOf(t, b, "")
	randomWorkload(t, ns, clock, rand.New(rand.NewPCG(7, 1)), 500)
	// Units nobody changes, so that most snapshots are deltas (dirty.go).
	if _, err := ns.SetWorkSpec(context.Background(), coordinate.Data{0xa1, 0x64, 'n', 'a', 'm', 'e', 0x61, 's'}); err != nil {
		t.Fatal(err)
	}
	fill(t, ns, context.Background(), "u", 1500)

	r := rand.New(rand.NewPCG(7, 2))
	b.wal.betweenChunks = func() { randomWorkload(t, ns, clock, r, 10) }
	snaps, saved, deltas := 0, 0, 0
	for range 8 {
		atBoundary := dumpAll(b) // nothing changes before the first pause
		st, err := b.Snapshot(context.Background())
		if err != nil {
			t.Fatalf("snapshot during changes: %v", err)
		}
		snaps++
		saved += st.Saved
		if st.Delta {
			deltas++
		}
		// The snapshot plus the journal after it is the live state.
		copied := flushedCopy(t, b, dir)
		if got := snapshotOnly(t, copied, clock); got != atBoundary {
			t.Fatalf("snapshot %d differs from the state at its boundary:\n--- snapshot\n%s\n--- at the boundary\n%s", snaps, got, atBoundary)
		}
		c := openPersistent(t, copied, clock, 1<<40)
		if c.wal.j.Report().Snapshot == "" {
			t.Fatal("recovery used no snapshot")
		}
		checkInvariants(t, c.namespaces[""].st)
		if got, want := dumpAll(c), dumpAll(b); got != want {
			t.Fatalf("snapshot %d and the journal after it differ from the live state:\n--- recovered\n%s\n--- live\n%s", snaps, got, want)
		}
		crash(t, c)
	}
	b.wal.betweenChunks = nil
	if saved == 0 {
		t.Fatal("no unit was saved on write: the workload never changed a unit during a capture, the test proves nothing")
	}
	if deltas == 0 || deltas == snaps {
		t.Fatalf("%d of %d snapshots were deltas: the test wants both kinds", deltas, snaps)
	}
	// Changes after the last snapshot are in the journal only.
	randomWorkload(t, ns, clock, rand.New(rand.NewPCG(7, 3)), 200)
	want := dumpAll(b)
	crash(t, b)

	b2 := openPersistent(t, dir, clock, 1<<40)
	defer b2.Close()
	if b2.wal.j.Report().Snapshot == "" {
		t.Fatal("recovery used no snapshot")
	}
	checkInvariants(t, b2.namespaces[""].st)
	if got := dumpAll(b2); got != want {
		t.Fatalf("recovered state differs:\n--- recovered\n%s\n--- live\n%s", got, want)
	}
	t.Logf("%d snapshots (%d deltas), %d units saved on write", snaps, deltas, saved)
}

// TestRestoreKeepsUnmovedLayout: a capture during which nothing moved
// restores to the live state with the live heap layout, position by
// position: a full snapshot lists the units heap by heap in position order
// (unitWalk.spec), which the loader keeps, so its heapify moves nothing.
func TestRestoreKeepsUnmovedLayout(t *testing.T) {
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ns := newNamespace("x", Options{Clock: clock, StallTimeout: time.Minute})
	randomWorkload(t, ns, clock, rand.New(rand.NewPCG(3, 3)), 2000)
	c := captureNamespace(ns)
	st, err := c.restore()
	if err != nil {
		t.Fatal(err)
	}
	if a, b := dump(st), dump(ns.st); a != b {
		t.Fatalf("state changed:\n%s\n---\n%s", a, b)
	}
	checkInvariants(t, st)
	units := c.units
	for _, cs := range c.specs {
		name := cs.name.Bytes
		// The capture lists the spec's units heap by heap, in position
		// order, and the restored heaps keep that layout.
		listed := units[:cs.units]
		units = units[cs.units:]
		restored := st.specs[name].heaps()
		for hi, h := range ns.st.specs[name].heaps() {
			if len(h.items) != len(restored[hi].items) {
				t.Fatalf("spec %q heap %d: %d units restored, %d live", name, hi, len(restored[hi].items), len(h.items))
			}
			for k := range h.items {
				if listed[0].key != h.items[k].u.key {
					t.Fatalf("spec %q heap %d position %d: unit %q listed, %q live", name, hi, k, listed[0].key, h.items[k].u.key)
				}
				listed = listed[1:]
				if a, b := restored[hi].items[k].u.key, h.items[k].u.key; a != b {
					t.Fatalf("spec %q heap %d position %d: unit %q restored, %q live", name, hi, k, a, b)
				}
			}
		}
	}
}

// flushedCopy flushes b's journal and copies its data directory dir to a
// new one, which it returns.
func flushedCopy(t *testing.T, b *Backend, dir string) string {
	t.Helper()
	if err := b.wal.j.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	copied := t.TempDir()
	if err := os.CopyFS(copied, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return copied
}

// snapshotOnly loads the newest snapshot of a copied data directory and
// the deltas after it, without the journal after them, and dumps it.
func snapshotOnly(t *testing.T, dir string, clock *coordinate.FakeClock) string {
	t.Helper()
	j, err := journal.Open(journal.Options{Dir: dir, ContentVersion: recordFormat})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	b := New(Options{Clock: clock, StallTimeout: time.Minute})
	b.wal = &wal{blobs: newBlobStore(dir, quietLogger()), log: quietLogger()} // large unit data
	skip := func([]byte, uint32) error { return nil }
	if err := j.ReplayWith(journal.ReplayFuncs{Snapshot: b.loadSnapshot, Delta: b.loadDelta, Apply: skip}); err != nil {
		t.Fatal(err)
	}
	return dumpAll(b)
}

// TestSnapshotConcurrentWithClients takes snapshots (three units per lock
// hold) while clients add, lease and finish units from other goroutines,
// as the daemon does; run under -race it checks the capture's locking,
// and the recovered state must equal the live one.
func TestSnapshotConcurrentWithClients(t *testing.T) {
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 1<<40)
	b.wal.captureChunk = 3
	ctx := context.Background()
	ns := nsOf(t, b, "")
	if _, err := ns.SetWorkSpec(ctx, coordinate.Data{0xa1, 0x64, 'n', 'a', 'm', 'e', 0x61, 's'}); err != nil {
		t.Fatal(err)
	}
	fill(t, ns, ctx, "q", 300)
	stop := make(chan struct{})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for c := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := coordinate.Name{Bytes: fmt.Sprint("w", c), Text: true}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				in := []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: fmt.Sprintf("c%d-%d", c, i), Text: true}, Data: smallData}}
				if err := ns.AddWorkUnits(ctx, "s", in); err != nil {
					errs <- err
					return
				}
				as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, LeaseTime: time.Minute, MaxJobs: 2})
				if err == nil && len(as) > 0 {
					err = ns.UpdateWorkUnit(ctx, "s", as[0].Key.Bytes, coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range 20 {
		if _, err := b.Snapshot(ctx); err != nil {
			t.Errorf("snapshot: %v", err)
			break
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := dumpAll(b)
	crash(t, b)
	b2 := openPersistent(t, dir, clock, 1<<40)
	defer b2.Close()
	checkInvariants(t, b2.namespaces[""].st)
	if got := dumpAll(b2); got != want {
		t.Fatalf("recovered state differs:\n--- recovered\n%s\n--- live\n%s", got, want)
	}
}

// TestCaptureStreamsBoundaryValues walks a capture of 5 000 units in
// chunks of 100 while clients lease, finish and add units between the
// chunks (and finish or raise the priority of units the walk has not
// reached): the units come out a chunk at a time (never all at once), each
// exactly as it was at the boundary (a unit changed or moved in a heap
// meanwhile is not given with its new value), and none added after the
// boundary is given.
func TestCaptureStreamsBoundaryValues(t *testing.T) {
	const chunk = 100
	ns, ctx := benchNamespace(t)
	fill(t, ns, ctx, "u", 5000)
	render := func(u *unit) string {
		return fmt.Sprintf("%q st=%v prio=%v exp=%d lease=%d w=%q where=%d data=%x",
			u.key, u.status, u.priority, u.expiration, u.leaseID, u.worker, u.where, u.data)
	}
	ns.mu.Lock()
	atBoundary := map[string]string{}
	for _, u := range ns.st.specs["s"].units {
		atBoundary[u.key] = render(u)
	}
	c := beginCapture(ns, chunk, false)
	ns.mu.Unlock()

	worker := coordinate.Name{Bytes: "w", Text: true}
	added := 0
	between := func() {
		as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, LeaseTime: time.Minute, MaxJobs: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(as) > 0 {
			err = ns.UpdateWorkUnit(ctx, "s", as[0].Key.Bytes, coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
		}
		// Units the walk (in map order) may not have reached: one
		// finished, one moved to the top of the heap, which sifts others.
		if err == nil {
			err = ns.UpdateWorkUnit(ctx, "s", fmt.Sprintf("u%09d", 4999-2*added), coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
		}
		if err == nil {
			p := float64(added + 1)
			_, err = ns.PrioritizeWorkUnits(ctx, "s", []string{fmt.Sprintf("u%09d", 4998-2*added)}, &p, 0)
		}
		if err == nil {
			added++
			err = ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: fmt.Sprint("new", added), Text: true}, Data: smallData}})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var sizes []int
	seen := map[string]bool{}
	err := c.units(false, between, func(i int, us []unit) error {
		sizes = append(sizes, len(us))
		for k := range us {
			u := &us[k]
			want, ok := atBoundary[u.key]
			switch {
			case !ok:
				t.Errorf("unit %q, added after the boundary, is in the snapshot", u.key)
			case seen[u.key]:
				t.Errorf("unit %q given twice", u.key)
			case render(u) != want:
				t.Errorf("unit given as\n%s\nwant its boundary value\n%s", render(u), want)
			}
			seen[u.key] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(atBoundary) {
		t.Errorf("%d units given, %d at the boundary", len(seen), len(atBoundary))
	}
	if c.saved == 0 || added < 40 {
		t.Fatalf("%d pre-images, %d units added during the walk: the test changed nothing during it", c.saved, added)
	}
	for _, n := range sizes {
		if n > chunk {
			t.Fatalf("a batch of %d units (chunk %d, %d pre-images): the capture is not streamed", n, chunk, c.saved)
		}
	}
	if ns.st.cow != nil {
		t.Fatal("copy-on-write still on after the walk")
	}
	t.Logf("%d batches, %d pre-images, %d units added during the walk", len(sizes), c.saved, added)
}

// TestHeapWalkMissIsTaken: a full capture walks the heaps one unit per
// lock hold while, between two holds, a get_work leases the top unit,
// which moves the heap's last unit to its top, a place already walked,
// without changing it (no copy-on-write). The map walk must take it: the
// capture holds every unit once, as at the boundary.
func TestHeapWalkMissIsTaken(t *testing.T) {
	ctx := context.Background()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ns := newNamespace("x", Options{Clock: clock, StallTimeout: time.Minute})
	defineSpec(t, ctx, ns, "s")
	fill(t, ns, ctx, "k", 64)
	atBoundary := dump(ns.st)
	ns.mu.Lock()
	c := beginCapture(ns, 1, false)
	ns.mu.Unlock()
	leases := 0
	between := func() {
		if leases < 8 {
			leases++
			if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w"}, LeaseTime: time.Hour, MaxJobs: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := c.out
	err := c.units(false, between, func(_ int, us []unit) error {
		out.units = append(out.units, us...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if leases != 8 || len(out.units) != 64 {
		t.Fatalf("%d leases during the capture, %d units captured; want 8 and 64", leases, len(out.units))
	}
	st, err := out.restore()
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, st)
	if got := dump(st); got != atBoundary {
		t.Fatalf("capture differs from the state at its boundary:\n%s\n---\n%s", got, atBoundary)
	}
}
