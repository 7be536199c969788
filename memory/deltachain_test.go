package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// TestRecoverDropIsSnapshotted: units a -recover start drops (their blob
// is lost) are gone for good once the next snapshot is written. That
// snapshot must be a full one: a delta would leave the full snapshot that
// still refers to the lost blob in the chain, and the next start without
// -recover would fail on it again.
func TestRecoverDropIsSnapshotted(t *testing.T) {
	for _, where := range []string{"full", "delta"} {
		t.Run(where, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			b := openPersistent(t, dir, clock, 1<<40)
			ns := nsOf(t, b, "")
			blobSpec(t, ns)
			fill(t, ns, ctx, "u", 100)
			if where == "delta" {
				snapshot(t, b) // full, without the big units
			}
			addBig(t, ns, "s", 0, 3, 1)
			if st := snapshot(t, b); st.Delta != (where == "delta") {
				t.Fatalf("snapshot %+v, want delta %v", st, where == "delta")
			}
			crash(t, b)
			path := (&blobStore{dir: filepath.Join(dir, blobDirName)}).path(sha256Of(bigData(blobThreshold+1, 2)))
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			opts := Options{Clock: clock, StallTimeout: time.Minute, DataDir: dir, Sync: journal.SyncNone, Logger: quietLogger(), Recover: true}
			r, err := Open(ctx, opts)
			if err != nil {
				t.Fatalf("open with -recover: %v", err)
			}
			want := dumpAll(r)
			if err := r.Close(); err != nil { // its final snapshot
				t.Fatal(err)
			}
			opts.Recover = false
			c, err := Open(ctx, opts)
			if err != nil {
				t.Fatalf("open without -recover after a -recover start and a snapshot: %v", err)
			}
			defer c.Close()
			if got := dumpAll(c); got != want {
				t.Fatalf("state after the -recover start differs:\n%s", dumpDiff(got, want))
			}
		})
	}
}

// TestDeltaCountersSurviveRestart: a restart that loads a full snapshot
// and deltas counts what they hold as the live backend did when it wrote
// them (units and deleted keys), so the choice between a delta and a full
// snapshot does not drift across restarts.
func TestDeltaCountersSurviveRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 1<<40)
	ns, _ := benchNamespaceIn(t, b)
	fill(t, ns, ctx, "u", 1000)
	snapshot(t, b)
	for i := range 2 {
		if _, err := ns.DeleteWorkUnits(ctx, "s", coordinate.DeleteQuery{Keys: []string{fmt.Sprintf("u%09d", 10*i), fmt.Sprintf("u%09d", 10*i+1)}}); err != nil {
			t.Fatal(err)
		}
		fill(t, ns, ctx, fmt.Sprint("n", i), 10)
		if st := snapshot(t, b); !st.Delta || st.Gone == 0 {
			t.Fatalf("snapshot %+v, want a delta with deleted keys", st)
		}
	}
	type counters struct{ base, deltas, deltaUnits int }
	w := b.wal
	want := counters{w.baseUnits, w.deltas, w.deltaUnits}
	crash(t, b)
	c := openPersistent(t, dir, clock, 1<<40)
	defer c.Close()
	if got := (counters{c.wal.baseUnits, c.wal.deltas, c.wal.deltaUnits}); got != want {
		t.Fatalf("after a restart the chain counts %+v, the live backend counted %+v", got, want)
	}
}

// TestRecoverDamagedDeltaThenRestart: after a -recover start that set a
// damaged delta aside, the backend takes changes, and a start without
// -recover restores exactly the state it had.
func TestRecoverDamagedDeltaThenRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, clock := deltaChain(t, dir, 3)
	crash(t, b)
	deltas, _ := filepath.Glob(filepath.Join(dir, "snapshot-*.delta"))
	f, err := os.OpenFile(deltas[1], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff, 0xee}, 200); err != nil {
		t.Fatal(err)
	}
	f.Close()
	opts := Options{Clock: clock, StallTimeout: time.Minute, DataDir: dir, Sync: journal.SyncNone, Logger: quietLogger(), Recover: true}
	r, err := Open(ctx, opts)
	if err != nil {
		t.Fatalf("-recover: %v", err)
	}
	ns := nsOf(t, r, "")
	fill(t, ns, ctx, "after", 20)
	if _, err := ns.DeleteWorkUnits(ctx, "s", coordinate.DeleteQuery{Keys: []string{"u000000500"}}); err != nil {
		t.Fatal(err)
	}
	for _, clean := range []bool{false, true} {
		want := dumpAll(r)
		if clean {
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			if _, err := r.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			fill(t, nsOf(t, r, ""), ctx, "tail", 5)
			want = dumpAll(r)
			crash(t, r)
		}
		opts.Recover = false
		r, err = Open(ctx, opts)
		if err != nil {
			t.Fatalf("start without -recover after a -recover start (clean close %v): %v", clean, err)
		}
		checkInvariants(t, r.namespaces[""].st)
		if got := dumpAll(r); got != want {
			t.Fatalf("state after the restart (clean close %v) differs:\n%s", clean, dumpDiff(got, want))
		}
	}
	r.Close()
}

// TestDeltaInstallCrashPoints: a crash at each step of installing a delta
// leaves a directory that restores the state: while it is being written
// (an unfinished file beside the chain and every segment), once it is
// renamed into place but before the segments it supersedes are deleted,
// and after.
func TestDeltaInstallCrashPoints(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, clock := deltaChain(t, dir, 1)
	defer b.Close()
	ns := nsOf(t, b, "")
	fill(t, ns, ctx, "more", 30)
	if _, err := ns.DeleteWorkUnits(ctx, "s", coordinate.DeleteQuery{Keys: []string{"u000000007"}}); err != nil {
		t.Fatal(err)
	}
	copyDir := func() string {
		t.Helper()
		if err := b.wal.j.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		c := t.TempDir()
		if err := os.CopyFS(c, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	before := copyDir()
	var writing string
	b.wal.betweenChunks = func() {
		if writing == "" {
			writing = copyDir()
		}
	}
	if st := snapshot(t, b); !st.Delta {
		t.Fatalf("snapshot %+v, want a delta", st)
	}
	b.wal.betweenChunks = nil
	after := copyDir()
	renamed := copyDir()
	segs, _ := filepath.Glob(filepath.Join(before, "journal-*.log"))
	restored := 0
	for _, s := range segs {
		if _, err := os.Stat(filepath.Join(renamed, filepath.Base(s))); err == nil {
			continue
		}
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(renamed, filepath.Base(s)), data, 0o600); err != nil {
			t.Fatal(err)
		}
		restored++
	}
	if restored == 0 {
		t.Fatal("the delta deleted no segment: the renamed-but-not-cleaned state is not built")
	}
	if temps, _ := filepath.Glob(filepath.Join(writing, "*.tmp")); writing == "" || len(temps) == 0 {
		t.Fatalf("no unfinished delta in the copy taken while writing (%q)", writing)
	}
	want := dumpAll(b)
	for _, tc := range []struct {
		name, dir string
		deltas    int
	}{{"writing", writing, 1}, {"renamed", renamed, 2}, {"installed", after, 2}} {
		c, err := Open(ctx, Options{Clock: clock, StallTimeout: time.Minute, DataDir: tc.dir, Sync: journal.SyncNone, Logger: quietLogger()})
		if err != nil {
			t.Fatalf("crash while %s: %v", tc.name, err)
		}
		rep := c.wal.j.Report()
		got := dumpAll(c)
		crash(t, c)
		if len(rep.Deltas) != tc.deltas || len(rep.SetAside) > 0 || len(rep.Missing) > 0 {
			t.Fatalf("crash while %s: %+v, want %d deltas loaded and nothing damaged", tc.name, rep, tc.deltas)
		}
		if got != want {
			t.Fatalf("crash while %s: state differs:\n%s", tc.name, dumpDiff(got, want))
		}
	}
}
