package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// deltaChain builds, in dir, a full snapshot of a namespace with 2 000
// units in spec "s" plus randomWorkload's specs, then n deltas, each after
// a few changes: random work, a key of "s" deleted and added again, one
// deleted for good, one added, and (in the third) spec "d" deleted and
// made again with other units. After each snapshot the snapshot chain
// alone (no journal) must give the state at its boundary. It returns the
// live backend and its clock.
func deltaChain(t *testing.T, dir string, n int) (*Backend, *coordinate.FakeClock) {
	t.Helper()
	ctx := context.Background()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 1<<40)
	b.wal.maxDeltas, b.wal.deltaShare = 100, 2
	ns := nsOf(t, b, "")
	def := coordinate.Data{0xa1, 0x64, 'n', 'a', 'm', 'e', 0x61, 's'}
	if _, err := ns.SetWorkSpec(ctx, def); err != nil {
		t.Fatal(err)
	}
	fill(t, ns, ctx, "u", 2000)
	r := rand.New(rand.NewPCG(11, 12))
	randomWorkload(t, ns, clock, r, 300)
	snapshot := func(wantDelta bool) SnapshotStats {
		t.Helper()
		atBoundary := dumpAll(b)
		st, err := b.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Delta != wantDelta {
			t.Fatalf("snapshot %+v, want delta %v", st, wantDelta)
		}
		if err := b.wal.j.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		copied := t.TempDir()
		if err := os.CopyFS(copied, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		if got := snapshotOnly(t, copied, clock); got != atBoundary {
			t.Fatalf("the snapshots (delta %v) differ from the state at the boundary:\n--- loaded\n%s\n--- at the boundary\n%s", st.Delta, got, atBoundary)
		}
		return st
	}
	snapshot(false)
	w := coordinate.Name{Bytes: "dw", Text: true}
	for i := range n {
		clock.Add(time.Second)
		randomWorkload(t, ns, clock, r, 40)
		again := fmt.Sprintf("u%09d", 100+i)
		if _, err := ns.DeleteWorkUnits(ctx, "s", coordinate.DeleteQuery{Keys: []string{again, fmt.Sprintf("u%09d", 1000+i)}}); err != nil {
			t.Fatal(err)
		}
		p := float64(i + 1)
		add := []coordinate.WorkUnitInput{
			{Key: coordinate.Name{Bytes: again, Text: true}, Data: smallData, Priority: &p},
			{Key: coordinate.Name{Bytes: fmt.Sprint("new", i), Text: true}, Data: smallData},
		}
		if err := ns.AddWorkUnits(ctx, "s", add); err != nil {
			t.Fatal(err)
		}
		if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: w, LeaseTime: time.Hour, MaxJobs: 3, WorkSpecs: []string{"s"}}); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if err := ns.DeleteWorkSpec(ctx, "d"); err != nil {
				t.Fatal(err)
			}
			if _, err := ns.SetWorkSpec(ctx, coordinate.Data{0xa1, 0x64, 'n', 'a', 'm', 'e', 0x61, 'd'}); err != nil {
				t.Fatal(err)
			}
			if err := ns.AddWorkUnits(ctx, "d", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "k00", Text: true}, Data: smallData}}); err != nil {
				t.Fatal(err)
			}
		}
		if st := snapshot(true); st.Units > 400 {
			t.Fatalf("delta %d holds %d units: more than changed", i, st.Units)
		}
	}
	return b, clock
}

// TestDeltaSnapshotsRestoreTheLiveState: a full snapshot, six deltas and
// the journal after them restore the live state (units, heaps in hand-out
// order, leases, dependencies, workers, groups), and the restored backend
// hands units out in the live order.
func TestDeltaSnapshotsRestoreTheLiveState(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, clock := deltaChain(t, dir, 6)
	defer b.Close()
	randomWorkload(t, nsOf(t, b, ""), clock, rand.New(rand.NewPCG(11, 13)), 50) // the journal tail
	if err := b.wal.j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	copied := t.TempDir()
	if err := os.CopyFS(copied, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	c := openPersistent(t, copied, clock, 1<<40)
	defer c.Close()
	rep := c.wal.j.Report()
	if rep.Snapshot == "" || len(rep.Deltas) != 6 || rep.Records == 0 {
		t.Fatalf("want a snapshot, 6 deltas and a journal tail, got %+v", rep)
	}
	checkInvariants(t, c.namespaces[""].st)
	if got, want := dumpAll(c), dumpAll(b); got != want {
		t.Fatalf("restored state differs:\n--- restored\n%s\n--- live\n%s", got, want)
	}
	// The restored backend writes deltas after the chain it loaded (with
	// deltaChain's policy: it counts the deltas loaded as the live one).
	c.wal.maxDeltas, c.wal.deltaShare = b.wal.maxDeltas, b.wal.deltaShare
	if st, err := c.Snapshot(ctx); err != nil || !st.Delta {
		t.Fatalf("snapshot after the restart: %+v, %v; want a delta", st, err)
	}
	clock.Add(2 * time.Hour) // leases expire: the pending heaps decide too
	worker := coordinate.Name{Bytes: "drain", Text: true}
	drain := func(ns coordinate.Namespace) []string {
		var keys []string
		for {
			as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, LeaseTime: time.Hour, MaxJobs: 1, WorkSpecs: []string{"s"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(as) == 0 {
				return keys
			}
			keys = append(keys, as[0].Key.Bytes)
		}
	}
	live, restored := drain(nsOf(t, b, "")), drain(nsOf(t, c, ""))
	if strings.Join(live, ",") != strings.Join(restored, ",") || len(live) < 1000 {
		t.Fatalf("hand-out order differs: live %d units, restored %d", len(live), len(restored))
	}
}

// TestDeltaPolicy: a full snapshot follows maxDeltas deltas, and one is
// written instead of a delta that would make the deltas hold more than
// 1/deltaShare (here an eighth) of the full snapshot's units; a full
// snapshot removes the deltas before it.
func TestDeltaPolicy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 1<<40)
	defer b.Close()
	b.wal.maxDeltas, b.wal.deltaShare = 2, 8 // the mechanism, not the defaults
	ns, _ := benchNamespaceIn(t, b)
	fill(t, ns, ctx, "u", 1000)
	kinds := ""
	snap := func() {
		st, err := b.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		kinds += map[bool]string{true: "d", false: "F"}[st.Delta]
	}
	change := func(n int) {
		p := 5.0
		var keys []string
		for i := range n {
			keys = append(keys, fmt.Sprintf("u%09d", i))
		}
		if _, err := ns.PrioritizeWorkUnits(ctx, "s", keys, &p, 0); err != nil {
			t.Fatal(err)
		}
	}
	snap()      // F: the first
	change(60)  // 60 of 1 000
	snap()      // d
	change(60)  // 120 in deltas
	snap()      // d
	change(10)  // a third delta: too many
	snap()      // F
	change(200) // more than an eighth
	snap()      // F
	change(10)  //
	snap()      // d
	if kinds != "FddFFd" {
		t.Fatalf("snapshots taken %q, want FddFFd", kinds)
	}
	deltas, _ := filepath.Glob(filepath.Join(dir, "snapshot-*.delta"))
	snaps, _ := filepath.Glob(filepath.Join(dir, "snapshot-*.snap"))
	if len(deltas) != 1 || len(snaps) != 1 {
		t.Fatalf("files left: snapshots %v, deltas %v; want the last full one and its delta", snaps, deltas)
	}
}

// benchNamespaceIn creates spec "s" in b's default namespace.
func benchNamespaceIn(t *testing.T, b *Backend) (*namespace, context.Context) {
	t.Helper()
	ns := nsOf(t, b, "")
	if _, err := ns.SetWorkSpec(context.Background(), coordinate.Data{0xa1, 0x64, 'n', 'a', 'm', 'e', 0x61, 's'}); err != nil {
		t.Fatal(err)
	}
	return ns, context.Background()
}

// TestDeltaChainDamage: a missing or damaged delta stops the start,
// naming the file; with -recover the chain is used up to the damage, the
// deltas after it are set aside and the segments that cannot follow are
// reported missing, as for a damaged snapshot.
func TestDeltaChainDamage(t *testing.T) {
	dir := t.TempDir()
	b, clock := deltaChain(t, dir, 3)
	crash(t, b)
	deltas, _ := filepath.Glob(filepath.Join(dir, "snapshot-*.delta"))
	if len(deltas) != 3 {
		t.Fatalf("deltas %v, want 3", deltas)
	}
	for _, tc := range []struct {
		name   string
		damage func(dir string, deltas []string)
		want   string
	}{
		{"missing", func(_ string, ds []string) { os.Remove(ds[1]) }, "a delta is missing"},
		{"damaged", func(_ string, ds []string) {
			f, err := os.OpenFile(ds[1], os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte{0xff, 0xee}, 200); err != nil {
				t.Fatal(err)
			}
		}, "checksum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			copied := t.TempDir()
			if err := os.CopyFS(copied, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			ds, _ := filepath.Glob(filepath.Join(copied, "snapshot-*.delta"))
			tc.damage(copied, ds)
			_, err := Open(context.Background(), Options{Clock: clock, DataDir: copied, Sync: journal.SyncNone, Logger: quietLogger()})
			var ce *journal.CorruptError
			if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), filepath.Base(ds[len(ds)-1])) && !strings.Contains(err.Error(), filepath.Base(ds[1])) {
				t.Fatalf("start with a %s delta: %v; want a corrupt-journal error naming it (%q)", tc.name, err, tc.want)
			}
			r, err := Open(context.Background(), Options{Clock: clock, DataDir: copied, Sync: journal.SyncNone, Logger: quietLogger(), Recover: true})
			if err != nil {
				t.Fatalf("-recover: %v", err)
			}
			defer r.Close()
			rep := r.wal.j.Report()
			if len(rep.Deltas) != 1 || len(rep.SetAside) == 0 || len(rep.Missing) == 0 {
				t.Fatalf("-recover: want the first delta loaded, the later set aside and the segments after the first missing: %+v", rep)
			}
			checkInvariants(t, r.namespaces[""].st)
		})
	}
}

// Deleting a whole spec outside a capture tracks none of its units: the
// next delta holds no tombstone for them (the spec's absence says they
// are gone), and a restart from it has neither the spec nor its units,
// while a spec of the same name made again after the deletion keeps only
// its own.
func TestDeletedSpecLeavesNoTombstones(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 1<<40)
	ns := nsOf(t, b, "")
	for _, name := range []string{"gone", "kept"} {
		defineSpec(t, ctx, ns, name)
		var units []coordinate.WorkUnitInput
		for i := range 1000 {
			units = append(units, coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("u%04d", i), Text: true}, Data: coordinate.EmptyMap})
		}
		if err := ns.AddWorkUnits(ctx, name, units); err != nil {
			t.Fatal(err)
		}
	}
	if st := snapshot(t, b); st.Delta {
		t.Fatal("the first snapshot is a delta")
	}
	b.wal.maxDeltas, b.wal.deltaShare = 1000, 0
	old := ns.st.specs["gone"]
	if err := ns.DeleteWorkSpec(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if len(old.dirty) != 0 || len(old.gone) != 0 {
		t.Fatalf("deleting a spec tracked %d dirty units and %d tombstones, want none", len(old.dirty), len(old.gone))
	}
	defineSpec(t, ctx, ns, "gone")
	if err := ns.AddWorkUnits(ctx, "gone", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "new", Text: true}, Data: coordinate.EmptyMap}}); err != nil {
		t.Fatal(err)
	}
	st := snapshot(t, b)
	if !st.Delta || st.Gone != 0 || st.Units != 1 {
		t.Fatalf("delta after deleting a 1000-unit spec: %+v; want a delta of the one new unit and no tombstones", st)
	}
	want := dumpAll(b)
	crashClose(b)
	r := openPersistent(t, dir, clock, 1<<40)
	defer r.Close()
	if got := dumpAll(r); got != want {
		t.Fatalf("restored state:\n%s\nwant\n%s", got, want)
	}
	if n, err := nsOf(t, r, "").CountWorkUnits(ctx, "gone"); err != nil || n[coordinate.StatusAvailable] != 1 {
		t.Fatalf("spec made again after its deletion restores with %v, %v; want its one unit", n, err)
	}
}

// TestLoadDeltaDecodedAside: Backend.loadDelta decodes on a goroutine of
// its own (decodeAside) while it applies. The golden delta loads through
// it to the golden changed state; cut anywhere, it fails with an error
// (never hangs, never loads as complete); applied without its base, the
// applier's error (a worker holding a unit the delta does not list) is
// the one returned.
func TestLoadDeltaDecodedAside(t *testing.T) {
	ns, _ := goldenDeltaState(t)
	store, _, _ := goldenBlobs(t)
	delta, err := os.ReadFile(filepath.FromSlash(goldenDelta))
	if err != nil {
		t.Fatal(err)
	}
	load := func(b *Backend, payload []byte) error {
		b.wal = &wal{blobs: store, log: quietLogger()}
		return b.loadDelta(bytes.NewReader(payload), journal.SnapshotInfo{MaxBytes: int64(len(payload))})
	}
	b, st := goldenBase(t, store)
	if err := load(b, delta); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, st)
	if got, w := dump(st), dump(ns.st); got != w {
		t.Fatalf("golden snapshot and delta load to\n%s\nwant\n%s", got, w)
	}
	if b.wal.deltas != 1 || b.wal.deltaUnits != 4+2 {
		t.Fatalf("delta counted as %d deltas of %d units and keys, want 1 of 6", b.wal.deltas, b.wal.deltaUnits)
	}
	for cut := range len(delta) {
		b, _ := goldenBase(t, store)
		if err := load(b, delta[:cut]); err == nil {
			t.Fatalf("delta cut at byte %d of %d loaded without an error", cut, len(delta))
		}
	}
	err = load(New(Options{}), delta)
	if err == nil || !strings.Contains(err.Error(), "holds missing unit") {
		t.Fatalf("delta applied without its base: %v, want a worker holding a missing unit", err)
	}
}
