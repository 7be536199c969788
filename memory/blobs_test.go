package memory

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// blobFiles lists the blob files of a data directory with their inodes
// and modification times.
func blobFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	paths, err := filepath.Glob(filepath.Join(dir, blobDirName, "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = fmt.Sprintf("%d/%d", fi.Sys().(*syscall.Stat_t).Ino, fi.ModTime().UnixNano())
	}
	return out
}

func addBig(t *testing.T, ns *namespace, spec string, first, n int, seed byte) {
	t.Helper()
	var units []coordinate.WorkUnitInput
	for i := first; i < first+n; i++ {
		units = append(units, coordinate.WorkUnitInput{
			Key:  coordinate.Name{Bytes: fmt.Sprintf("big%03d", i), Text: true},
			Data: bigData(blobThreshold+i, seed+byte(i)),
		})
	}
	if err := ns.AddWorkUnits(context.Background(), spec, units); err != nil {
		t.Fatal(err)
	}
}

func blobSpec(t *testing.T, ns *namespace) {
	t.Helper()
	defineSpec(t, context.Background(), ns, "s")
}

func snapshot(t *testing.T, b *Backend) SnapshotStats {
	t.Helper()
	st, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Large data across several snapshots (added, replaced, deleted, leased)
// restores exactly, whether the last change is in a snapshot or only in
// the journal.
func TestBlobSnapshotsRestore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 1<<40)
	ns := nsOf(t, b, "")
	blobSpec(t, ns)
	addBig(t, ns, "s", 0, 6, 1)
	if err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "small", Text: true}, Data: coordinate.EmptyMap}}); err != nil {
		t.Fatal(err)
	}
	snapshot(t, b)
	if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}, LeaseTime: time.Minute, WorkSpecs: []string{"s"}, MaxJobs: 2}); err != nil {
		t.Fatal(err)
	}
	// Finishing with new data replaces big001's data.
	if err := ns.UpdateWorkUnit(ctx, "s", "big001", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished, Data: bigData(blobThreshold*2, 9)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.DeleteWorkUnits(ctx, "s", coordinate.DeleteQuery{Keys: []string{"big002"}}); err != nil {
		t.Fatal(err)
	}
	snapshot(t, b)
	addBig(t, ns, "s", 10, 2, 3) // only in the journal
	want := dumpAll(b)
	crash(t, b)

	b2 := openPersistent(t, dir, clock, 1<<40)
	if got := dumpAll(b2); got != want {
		t.Fatalf("recovered\n%s\nwant\n%s", got, want)
	}
	snapshot(t, b2)
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	b3 := openPersistent(t, dir, clock, 1<<40)
	defer b3.Close()
	if got := dumpAll(b3); got != want {
		t.Fatalf("recovered from the blob snapshot\n%s\nwant\n%s", got, want)
	}
	if n := len(blobFiles(t, dir)); n != 7 {
		t.Fatalf("%d blobs, want the 7 large data the state holds", n)
	}
}

// A second snapshot does not rewrite large data that did not change: no
// blob bytes written, blob files untouched, and a snapshot file that holds
// only the references.
func TestBlobUnchangedNotRewritten(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 1<<40)
	defer b.Close()
	ns := nsOf(t, b, "")
	blobSpec(t, ns)
	addBig(t, ns, "s", 0, 8, 1)
	first := snapshot(t, b)
	if first.BlobBytes < 8*blobThreshold || first.Bytes >= blobThreshold {
		t.Fatalf("first snapshot: %d blob bytes, %d snapshot bytes; want all data in blobs", first.BlobBytes, first.Bytes)
	}
	before := blobFiles(t, dir)
	if err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "small", Text: true}, Data: coordinate.EmptyMap}}); err != nil {
		t.Fatal(err)
	}
	// A lease changes the unit, not its data.
	if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}, LeaseTime: time.Minute, WorkSpecs: []string{"s"}, MaxJobs: 3}); err != nil {
		t.Fatal(err)
	}
	second := snapshot(t, b)
	if second.BlobBytes != 0 || second.Bytes >= blobThreshold {
		t.Fatalf("second snapshot: %d blob bytes, %d snapshot bytes; want no data rewritten", second.BlobBytes, second.Bytes)
	}
	if after := blobFiles(t, dir); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("blob files changed:\n%v\nwant\n%v", after, before)
	}
	addBig(t, ns, "s", 8, 1, 1)
	third := snapshot(t, b)
	if third.BlobBytes != int64(len(bigData(blobThreshold+8, 9))) {
		t.Fatalf("third snapshot wrote %d blob bytes, want only the new unit's", third.BlobBytes)
	}
}

// failNextSnapshot makes the backend's next snapshot fail at install,
// after its file (and so its blobs) is written: a directory stands where
// the journal renames the snapshot file to. It returns
// the function that removes the obstacle.
func failNextSnapshot(t *testing.T, b *Backend, dir string) func() {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "journal-*"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segments in %s: %v", dir, err)
	}
	slices.Sort(segs)
	var seq uint64
	if _, err := fmt.Sscanf(filepath.Base(segs[len(segs)-1]), "journal-%d", &seq); err != nil {
		t.Fatal(err)
	}
	block := filepath.Join(dir, fmt.Sprintf("snapshot-%020d.snap", seq+1))
	// Not empty, so the rename cannot replace it.
	if err := os.MkdirAll(filepath.Join(block, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.RemoveAll(block); err != nil {
			t.Fatal(err)
		}
	}
}

// Blobs the installed snapshot still refers to survive a snapshot that
// fails before it is installed (a crash there), and go only once a
// snapshot not referring to them is installed. The directory left by the
// failed snapshot opens to the same state.
func TestBlobCollectedOnlyAfterInstall(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 1<<40)
	ns := nsOf(t, b, "")
	blobSpec(t, ns)
	addBig(t, ns, "s", 0, 3, 1)
	snapshot(t, b)
	if n := len(blobFiles(t, dir)); n != 3 {
		t.Fatalf("%d blobs, want 3", n)
	}
	if _, err := ns.DeleteWorkUnits(ctx, "s", coordinate.DeleteQuery{Keys: []string{"big000"}}); err != nil {
		t.Fatal(err)
	}
	addBig(t, ns, "s", 5, 1, 1)
	unblock := failNextSnapshot(t, b, dir)
	if _, err := b.Snapshot(ctx); err == nil {
		t.Fatal("snapshot succeeded despite the obstacle")
	}
	// The new blob is written, the deleted unit's blob is still there:
	// the installed snapshot refers to it.
	if n := len(blobFiles(t, dir)); n != 4 {
		t.Fatalf("%d blobs after a failed snapshot, want 4", n)
	}
	want := dumpAll(b)
	crash(t, b)
	unblock()

	b2 := openPersistent(t, dir, clock, 1<<40)
	if got := dumpAll(b2); got != want {
		t.Fatalf("recovered after a snapshot failed between blobs and install\n%s\nwant\n%s", got, want)
	}
	snapshot(t, b2)
	if n := len(blobFiles(t, dir)); n != 3 {
		t.Fatalf("%d blobs after the next installed snapshot, want 3 (big000's collected)", n)
	}
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	b3 := openPersistent(t, dir, clock, 1<<40)
	defer b3.Close()
	if got := dumpAll(b3); got != want {
		t.Fatalf("recovered after collection\n%s\nwant\n%s", got, want)
	}
}

// A missing or damaged blob referenced by the snapshot stops the start;
// with -recover the start drops the unit concerned and keeps the rest.
func TestBlobMissingIsDamage(t *testing.T) {
	for _, damage := range []string{"missing", "corrupt"} {
		t.Run(damage, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			b := openPersistent(t, dir, clock, 1<<40)
			ns := nsOf(t, b, "")
			blobSpec(t, ns)
			addBig(t, ns, "s", 0, 3, 1)
			if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}, LeaseTime: time.Minute, WorkSpecs: []string{"s"}, MaxJobs: 3}); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			path := (&blobStore{dir: filepath.Join(dir, blobDirName)}).path(sha256Of(bigData(blobThreshold+1, 2)))
			if damage == "missing" {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			} else {
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				data[100] ^= 1
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			opts := Options{Clock: clock, StallTimeout: time.Minute, DataDir: dir, Sync: journal.SyncNone, Logger: quietLogger()}
			if _, err := Open(ctx, opts); err == nil || !strings.Contains(err.Error(), `unit "big001"`) || !strings.Contains(err.Error(), "blob") {
				t.Fatalf("open with a %s blob: %v, want an error naming the unit and blob", damage, err)
			}
			opts.Recover = true
			b2, err := Open(ctx, opts)
			if err != nil {
				t.Fatalf("open with -recover: %v", err)
			}
			defer b2.Close()
			ns2 := nsOf(t, b2, "")
			ns2.mu.Lock()
			checkInvariants(t, ns2.st)
			units := ns2.st.specs["s"].units
			_, lost := units["big001"]
			n := len(units)
			ns2.mu.Unlock()
			if lost || n != 2 {
				t.Fatalf("after -recover: big001 present %v, %d units; want it dropped and 2 left", lost, n)
			}
		})
	}
}

func sha256Of(b []byte) blobHash { return sha256.Sum256(b) }

// TestBlobPutSyncsAnExistingName: a blob file already there (written by a
// snapshot that failed before its directories were fsynced) still has
// its directory fsynced by the snapshot that refers to it next.
func TestBlobPutSyncsAnExistingName(t *testing.T) {
	s := newBlobStore(t.TempDir(), quietLogger())
	data := bigData(blobThreshold, 5)
	h := sha256Of(data)
	if err := s.put(h, data, map[string]bool{}); err != nil { // the failed snapshot's
		t.Fatal(err)
	}
	dirty := map[string]bool{}
	if err := s.put(h, data, dirty); err != nil {
		t.Fatal(err)
	}
	if dir := filepath.Dir(s.path(h)); !dirty[dir] {
		t.Fatalf("putting a blob whose file exists left its directory %s out of the fsyncs (%v)", dir, dirty)
	}
}
