package memory

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// openPersistent opens a journaled backend in dir with a fake clock.
func openPersistent(t *testing.T, dir string, clock *coordinate.FakeClock, snapshotBytes int64) *Backend {
	t.Helper()
	b, err := Open(context.Background(), Options{
		Clock: clock, StallTimeout: time.Minute, DataDir: dir,
		Sync: journal.SyncNone, SnapshotBytes: snapshotBytes,
	})
	if err != nil {
		t.Fatalf("Open %s: %v", dir, err)
	}
	return b
}

// crash drops a backend the way a killed process would after its last
// acknowledged change: no final snapshot, the journal just stops (every
// acknowledged record is already written).
func crash(t *testing.T, b *Backend) {
	t.Helper()
	b.closeOnce.Do(func() {
		close(b.wal.stop)
		<-b.wal.done
		b.snapMu.Lock() // no snapshot may be running when the journal closes
		defer b.snapMu.Unlock()
		if err := b.wal.j.Close(); err != nil {
			t.Fatalf("closing journal: %v", err)
		}
	})
}

func nsOf(t *testing.T, b *Backend, name string) *namespace {
	t.Helper()
	ns, err := b.Namespace(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return ns.(*namespace)
}

// dumpAll renders every namespace of a backend.
func dumpAll(b *Backend) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := ""
	for _, name := range sortedNamespaceNames(b) {
		ns := b.namespaces[name]
		ns.mu.Lock()
		out += fmt.Sprintf("== namespace %q\n%s", name, dump(ns.st))
		ns.mu.Unlock()
	}
	return out
}

func sortedNamespaceNames(b *Backend) []string {
	var names []string
	for n := range b.namespaces {
		names = append(names, n)
	}
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			if names[j] < names[i] {
				names[i], names[j] = names[j], names[i]
			}
		}
	}
	return names
}

// TestRecoverAfterCrash runs a random workload on two namespaces, with
// snapshots either never, or often enough that several happen while it
// runs, "crashes", reopens and requires the identical state.
func TestRecoverAfterCrash(t *testing.T) {
	for _, tc := range []struct {
		name          string
		snapshotBytes int64
		closeCleanly  bool
	}{
		{"journal only", 1 << 40, false},
		{"background snapshots", 8 << 10, false},
		{"clean close", 1 << 40, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			b := openPersistent(t, dir, clock, tc.snapshotBytes)
			nsOf(t, b, "empty") // an empty namespace survives too
			for i, name := range []string{"", "other"} {
				randomWorkload(t, nsOf(t, b, name), clock, rand.New(rand.NewPCG(uint64(i+1), 9)), 1500)
			}
			want := dumpAll(b)
			snaps, _ := filepath.Glob(filepath.Join(dir, "snapshot-*.snap"))
			if tc.closeCleanly {
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				crash(t, b)
			}
			if tc.snapshotBytes < 1<<20 && len(snaps) == 0 {
				t.Fatal("no background snapshot was written: the case proves nothing")
			}

			b2 := openPersistent(t, dir, clock, tc.snapshotBytes)
			defer b2.Close()
			rep := b2.wal.j.Report()
			if tc.closeCleanly && (rep.Snapshot == "" || rep.Records != 0) {
				t.Fatalf("after a clean close want a snapshot and no records to replay, got %+v", rep)
			}
			for _, name := range sortedNamespaceNames(b2) {
				checkInvariants(t, b2.namespaces[name].st)
			}
			if got := dumpAll(b2); got != want {
				t.Fatalf("recovered state differs:\n--- recovered\n%s\n--- before the crash\n%s", got, want)
			}
			// The recovered backend keeps journaling: one more change
			// survives another crash.
			ns := nsOf(t, b2, "")
			defineSpec(t, context.Background(), ns, "z")
			want = dumpAll(b2)
			crash(t, b2)
			b3 := openPersistent(t, dir, clock, tc.snapshotBytes)
			defer b3.Close()
			if got := dumpAll(b3); got != want {
				t.Fatalf("second recovery differs:\n--- recovered\n%s\n--- before\n%s", got, want)
			}
		})
	}
}

// TestSnapshotRoundTrip encodes and restores a busy state directly.
func TestSnapshotRoundTrip(t *testing.T) {
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ns := newNamespace("x", Options{Clock: clock, StallTimeout: time.Minute})
	randomWorkload(t, ns, clock, rand.New(rand.NewPCG(5, 5)), 3000)
	c := captureNamespace(ns)
	f, err := os.CreateTemp(t.TempDir(), "snap")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeSnapshot(f, []*capturedNamespace{c}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	size, _ := f.Seek(0, io.SeekEnd)
	f.Seek(0, io.SeekStart)
	got, err := readSnapshot(f, size, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].name != "x" {
		t.Fatalf("read %d namespaces", len(got))
	}
	st, err := got[0].restore()
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, st)
	if a, b := dump(st), dump(ns.st); a != b {
		t.Fatalf("restored state differs:\n--- restored\n%s\n--- original\n%s", a, b)
	}
	// A truncated snapshot is an error, not a partial state.
	info, _ := f.Stat()
	if err := f.Truncate(info.Size() - 3); err != nil {
		t.Fatal(err)
	}
	f.Seek(0, 0)
	if _, err := readSnapshot(f, info.Size()-3, nil); err == nil {
		t.Fatal("truncated snapshot read without error")
	}
}

// TestLeasesSurviveRestart: a pending unit comes back pending with its
// deadline and expires as usual, counting toward max_retries.
func TestLeasesSurviveRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 0)
	ns := nsOf(t, b, "")
	def := coordinate.Data{0xa2, 0x64, 'n', 'a', 'm', 'e', 0x61, 's', 0x6b, 'm', 'a', 'x', '_', 'r', 'e', 't', 'r', 'i', 'e', 's', 0x01}
	if _, err := ns.SetWorkSpec(ctx, def); err != nil {
		t.Fatal(err)
	}
	if err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "u", Text: true}}}); err != nil {
		t.Fatal(err)
	}
	lease := func(ns *namespace) coordinate.Attempt {
		t.Helper()
		as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}, LeaseTime: 10 * time.Second, MaxJobs: 1})
		if err != nil || len(as) != 1 {
			t.Fatalf("get work: %v %v", as, err)
		}
		return as[0]
	}
	a := lease(ns)
	crash(t, b)

	b2 := openPersistent(t, dir, clock, 0)
	ns2 := nsOf(t, b2, "")
	units, err := ns2.GetWorkUnits(ctx, "s", []string{"u"})
	if err != nil {
		t.Fatal(err)
	}
	if u := units[0]; u.Status != coordinate.StatusPending || !u.Expiration.Equal(a.Expires) || u.Attempts != 1 {
		t.Fatalf("after restart: %+v, want pending until %v after 1 attempt", u, a.Expires)
	}
	// The recovered lease is still the caller's.
	if err := ns2.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "s", Key: "u", ID: a.ID}, coordinate.WorkUnitUpdate{Status: coordinate.StatusPending}); err != nil {
		t.Fatalf("renewing the recovered lease: %v", err)
	}
	clock.Add(11 * time.Second)
	a2 := lease(ns2) // expired, available again, second attempt
	if a2.ID == a.ID {
		t.Fatalf("lease id %d reused after restart", a.ID)
	}
	crash(t, b2)

	b3 := openPersistent(t, dir, clock, 0)
	defer b3.Close()
	ns3 := nsOf(t, b3, "")
	clock.Add(11 * time.Second)
	units, err = ns3.GetWorkUnits(ctx, "s", []string{"u"})
	if err != nil {
		t.Fatal(err)
	}
	if u := units[0]; u.Status != coordinate.StatusFailed {
		t.Fatalf("after the second expiry past max_retries 1: %v, want failed", u.Status)
	}
}

// TestCorruptJournalStopsStart: damage in the middle of the journal stops
// Open with the file named, unless Recover is set.
func TestCorruptJournalStopsStart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 1<<40)
	ns := nsOf(t, b, "")
	defineSpec(t, ctx, ns, "s")
	for i := range 20 {
		if err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: fmt.Sprint(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	crash(t, b)
	segs, _ := filepath.Glob(filepath.Join(dir, "journal-*.log"))
	if len(segs) == 0 {
		t.Fatal("no journal segment")
	}
	seg := segs[len(segs)-1]
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(seg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, Options{Clock: clock, DataDir: dir})
	if err == nil || !errorsIs(err, journal.ErrCorrupt) {
		t.Fatalf("Open on a damaged journal: %v, want a corrupt-journal error", err)
	}
	if want := filepath.Base(seg); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %s", err, want)
	}
	b2, err := Open(ctx, Options{Clock: clock, DataDir: dir, Recover: true})
	if err != nil {
		t.Fatalf("Open with Recover: %v", err)
	}
	defer b2.Close()
	counts, err := nsOf(t, b2, "").CountWorkUnits(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if n := counts[coordinate.StatusAvailable]; n == 0 || n >= 20 {
		t.Fatalf("recovered %d units, want the readable prefix (some, not all 20)", n)
	}
}

// TestHugeAddRecovers: a whole `coordinate load` arrives as one add; its
// record (more items than a default CBOR decoder accepts) replays, and
// binary keys survive.
func TestHugeAddRecovers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 1<<40)
	ns := nsOf(t, b, "")
	defineSpec(t, ctx, ns, "s")
	const n = 200_000
	units := make([]coordinate.WorkUnitInput, n)
	for i := range units {
		units[i] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("\xff%07d", i)}}
	}
	if err := ns.AddWorkUnits(ctx, "s", units); err != nil {
		t.Fatal(err)
	}
	crash(t, b)
	b2 := openPersistent(t, dir, clock, 1<<40)
	defer b2.Close()
	counts, err := nsOf(t, b2, "").CountWorkUnits(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if counts[coordinate.StatusAvailable] != n {
		t.Fatalf("recovered %v, want %d available", counts, n)
	}
}

// TestReplayedJournalCountsTowardSnapshot: a restart that replays more
// journal than the snapshot threshold compacts it soon after.
func TestReplayedJournalCountsTowardSnapshot(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 1<<40)
	ns := nsOf(t, b, "")
	defineSpec(t, ctx, ns, "s")
	fill(t, ns, ctx, "q", 1000)
	crash(t, b)
	b2 := openPersistent(t, dir, clock, 1000) // the journal holds far more than 1000 bytes
	defer b2.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if snaps, _ := filepath.Glob(filepath.Join(dir, "snapshot-*.snap")); len(snaps) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no snapshot after replaying a journal larger than the threshold")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
