package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"testing"
)

// counterState is a toy caller: a list of records applied so far, guarded
// by its lock, journaled with Append under that lock.
type counterState struct {
	mu      sync.Mutex
	applied []string
}

func (s *counterState) encode(w io.Writer, applied []string) error {
	for _, a := range applied {
		if _, err := fmt.Fprintln(w, a); err != nil {
			return err
		}
	}
	return nil
}

func TestSnapshotThenAppendsReplaysSnapshotAndLaterRecordsOnly(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	appendWait(t, j, numbered("before-", 0, 100)...)

	// A snapshot larger than one 64 KiB chunk.
	state := bytes.Repeat([]byte("snapshot state "), 20000)
	var mu sync.Mutex
	err := j.Snapshot(context.Background(), &mu, func() func(io.Writer) error {
		return func(w io.Writer) error {
			// Written in uneven pieces to exercise chunking.
			for rest := state; len(rest) > 0; {
				n := min(len(rest), 7777)
				if _, err := w.Write(rest[:n]); err != nil {
					return err
				}
				rest = rest[n:]
			}
			return nil
		}
	})
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	after := numbered("after-", 0, 50)
	appendWait(t, j, after...)

	// Old segments and the rotation: only segment 2 and snapshot 2 remain.
	l := listNames(t, dir)
	if fmt.Sprint(l.segments) != "[2]" || fmt.Sprint(l.snapshots) != "[2]" {
		t.Fatalf("after snapshot: segments %v snapshots %v, want [2] [2]", l.segments, l.snapshots)
	}
	j.Close()

	_, got := mustOpen(t, testOptions(dir, nil))
	if !bytes.Equal(got.snapshot, state) {
		t.Fatalf("snapshot replayed %d bytes, want the %d written", len(got.snapshot), len(state))
	}
	equalRecords(t, got.records, after)
}

// TestSnapshotsUnderConcurrentAppends checks the boundary contract: with
// appenders running, several snapshots are taken; after a crash copy, the
// snapshot plus the records after it give back exactly every record, once,
// in order.
func TestSnapshotsUnderConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	s := &counterState{}
	const writers, perWriter = 4, 150
	var wg sync.WaitGroup
	var next int
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWriter {
				s.mu.Lock()
				rec := strconv.Itoa(next)
				next++
				s.applied = append(s.applied, rec)
				tk := j.Append([]byte(rec))
				s.mu.Unlock()
				if err := j.Wait(context.Background(), tk); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 5 {
		err := j.Snapshot(context.Background(), &s.mu, func() func(io.Writer) error {
			frozen := append([]string(nil), s.applied...)
			return func(w io.Writer) error { return s.encode(w, frozen) }
		})
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
	}
	wg.Wait()

	_, got := mustOpen(t, testOptions(copyDir(t, dir), nil))
	var all []string
	if got.snapshot != nil {
		for line := range bytes.Lines(got.snapshot) {
			all = append(all, string(bytes.TrimSuffix(line, []byte("\n"))))
		}
	}
	for _, r := range got.records {
		all = append(all, string(r))
	}
	if len(all) != writers*perWriter {
		t.Fatalf("snapshot+records hold %d records, want %d", len(all), writers*perWriter)
	}
	for i, r := range all {
		if r != strconv.Itoa(i) {
			t.Fatalf("position %d holds %q: a record was lost or applied twice", i, r)
		}
	}
}

func TestCrashMidSnapshotIsIgnored(t *testing.T) {
	recs := numbered("r", 0, 10)
	dir, _ := writeSegment1(t, recs)
	// What a crash while writing snapshot 2 leaves: a partial temp file.
	temp := join(dir, snapshotName(2)+tempSuffix)
	if err := os.WriteFile(temp, append(encodeHeader(snapshotMagic, 2, 0), 1, 2, 3), 0o600); err != nil {
		t.Fatal(err)
	}
	j, got := mustOpen(t, testOptions(dir, nil))
	if got.snapshot != nil {
		t.Fatal("an unfinished snapshot was loaded")
	}
	equalRecords(t, got.records, recs)
	if _, err := os.Stat(temp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("unfinished snapshot still present: %v", err)
	}
	if r := j.Report(); len(r.Removed) != 1 || r.Removed[0] != temp {
		t.Fatalf("Removed = %v, want [%s]", r.Removed, temp)
	}
}

func TestFailedSnapshotWriterLeavesJournalIntact(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	recs := numbered("r", 0, 20)
	appendWait(t, j, recs[:10]...)
	boom := errors.New("boom")
	var mu sync.Mutex
	err := j.Snapshot(context.Background(), &mu, func() func(io.Writer) error {
		return func(w io.Writer) error {
			w.Write([]byte("partial"))
			return boom
		}
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Snapshot = %v, want boom", err)
	}
	appendWait(t, j, recs[10:]...)
	j.Close()
	if l := listNames(t, dir); len(l.snapshots) != 0 || len(l.temps) != 0 {
		t.Fatalf("failed snapshot left files: %+v", l)
	}
	_, got := mustOpen(t, testOptions(dir, nil))
	equalRecords(t, got.records, recs)
}

func TestCorruptSnapshot(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	appendWait(t, j, numbered("old", 0, 5)...)
	var mu sync.Mutex
	if err := j.Snapshot(context.Background(), &mu, func() func(io.Writer) error {
		return func(w io.Writer) error { _, err := w.Write([]byte("the state")); return err }
	}); err != nil {
		t.Fatal(err)
	}
	appendWait(t, j, []byte("later"))
	j.Close()
	snap := join(dir, snapshotName(2))
	flipByte(t, snap, headerSize+frameHeaderSize+2)

	_, err := Open(testOptions(dir, nil))
	wantCorrupt(t, err, snap, headerSize)

	// With Recover there is no older snapshot to fall back to, and the
	// segments after the snapshot cannot be applied without it: the
	// journal starts empty, with everything set aside.
	opts := testOptions(dir, nil)
	opts.Recover = true
	j, got := mustOpen(t, opts)
	if got.snapshot != nil || len(got.records) != 0 {
		t.Fatalf("recovered %q + %d records from a journal whose only snapshot is corrupt", got.snapshot, len(got.records))
	}
	if len(j.Report().SetAside) != 2 {
		t.Fatalf("SetAside = %v, want the snapshot and segment 2", j.Report().SetAside)
	}
}

func TestWriteSnapshotRejectsAnOlderBoundary(t *testing.T) {
	j, _ := mustOpen(t, testOptions(t.TempDir(), nil))
	b1 := j.Rotate()
	b2 := j.Rotate()
	w := func(w io.Writer) error { return nil }
	if err := j.WriteSnapshot(context.Background(), b2, w); err != nil {
		t.Fatal(err)
	}
	if err := j.WriteSnapshot(context.Background(), b1, w); !errors.Is(err, ErrSnapshotSuperseded) {
		t.Fatalf("older snapshot after newer = %v, want ErrSnapshotSuperseded", err)
	}
}

// snapshotOf writes a snapshot holding state.
func snapshotOf(t *testing.T, j *Journal, state string) {
	t.Helper()
	var mu sync.Mutex
	if err := j.Snapshot(context.Background(), &mu, func() func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, state); return err }
	}); err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
}

// A crash between installing a snapshot and deleting what it supersedes
// leaves an older snapshot and its segments: Open uses the newest snapshot
// and removes the rest; with Recover, a corrupt newest snapshot falls back
// to the older one and replays every segment after it.
func TestOlderSnapshotLeftovers(t *testing.T) {
	dir := t.TempDir()
	// The leftover segment 2 is copied while it is being written; without
	// preallocation that copy equals the finished segment (a finished
	// segment is cut to its used length, a live one has zeros after it).
	opts := testOptions(dir, nil)
	opts.Preallocate = -1
	j, _ := mustOpen(t, opts)
	appendWait(t, j, []byte("a"))
	snapshotOf(t, j, "S2")        // snapshot 2; segment 1 deleted
	appendWait(t, j, []byte("b")) // segment 2
	saved := copyDir(t, dir)      // snapshot 2 + segment 2
	snapshotOf(t, j, "S3")        // snapshot 3; snapshot 2 and segment 2 deleted
	appendWait(t, j, []byte("c")) // segment 3
	j.Close()
	for _, name := range []string{snapshotName(2), segmentName(2)} {
		b, err := os.ReadFile(join(saved, name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(join(dir, name), b, 0o600)
	}
	withLeftovers := copyDir(t, dir)

	j, got := mustOpen(t, testOptions(dir, nil))
	if string(got.snapshot) != "S3" {
		t.Fatalf("loaded snapshot %q, want S3", got.snapshot)
	}
	equalRecords(t, got.records, [][]byte{[]byte("c")})
	if n := len(j.Report().Removed); n != 2 {
		t.Fatalf("Removed %v, want snapshot 2 and segment 2", j.Report().Removed)
	}

	flipByte(t, join(withLeftovers, snapshotName(3)), headerSize+frameHeaderSize)
	opts = testOptions(withLeftovers, nil)
	opts.Recover = true
	_, got = mustOpen(t, opts)
	if string(got.snapshot) != "S2" {
		t.Fatalf("recovered snapshot %q, want the older S2", got.snapshot)
	}
	equalRecords(t, got.records, [][]byte{[]byte("b"), []byte("c")})
}

func TestWriteSnapshotAfterCloseFails(t *testing.T) {
	j, _ := mustOpen(t, testOptions(t.TempDir(), nil))
	b := j.Rotate()
	j.Close()
	if err := j.WriteSnapshot(context.Background(), b, func(io.Writer) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("WriteSnapshot after Close = %v, want ErrClosed", err)
	}
}

// Close waits for a snapshot in progress, which then completes.
func TestCloseWaitsForSnapshotInProgress(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	appendWait(t, j, []byte("a"))
	b := j.Rotate()
	writing := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- j.WriteSnapshot(context.Background(), b, func(w io.Writer) error {
			close(writing)
			<-release
			_, err := io.WriteString(w, "S")
			return err
		})
	}()
	<-writing
	closed := make(chan error)
	go func() { closed <- j.Close() }()
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("snapshot in progress during Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	_, got := mustOpen(t, testOptions(dir, nil))
	if string(got.snapshot) != "S" || len(got.records) != 0 {
		t.Fatalf("replayed %q + %d records, want the snapshot only", got.snapshot, len(got.records))
	}
}

// A crash while a superseded snapshot was being cut down for removal
// (removeFile) leaves part of it, and maybe part of a superseded segment:
// the next Open replays the newest snapshot and removes both.
func TestInterruptedRemovalOfSupersededFiles(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	snap := func(state []byte) {
		var mu sync.Mutex
		if err := j.Snapshot(context.Background(), &mu, func() func(io.Writer) error {
			return func(w io.Writer) error { _, err := w.Write(state); return err }
		}); err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
	}
	appendWait(t, j, numbered("a-", 0, 20)...)
	snap(bytes.Repeat([]byte("first "), 30000))
	appendWait(t, j, numbered("b-", 0, 20)...)
	old := listNames(t, dir)
	oldSnap, oldSeg := join(dir, snapshotName(old.snapshots[0])), join(dir, segmentName(old.segments[0]))
	keptSnap, err := os.ReadFile(oldSnap)
	if err != nil {
		t.Fatal(err)
	}
	keptSeg, err := os.ReadFile(oldSeg)
	if err != nil {
		t.Fatal(err)
	}
	second := bytes.Repeat([]byte("second "), 30000)
	snap(second)
	after := numbered("c-", 0, 20)
	appendWait(t, j, after...)
	j.Close()
	if err := os.WriteFile(oldSnap, keptSnap[:len(keptSnap)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(oldSeg, keptSeg[:len(keptSeg)/2], 0o600); err != nil {
		t.Fatal(err)
	}

	_, got := mustOpen(t, testOptions(dir, nil))
	if !bytes.Equal(got.snapshot, second) {
		t.Fatalf("replayed a snapshot of %d bytes, want the second one (%d)", len(got.snapshot), len(second))
	}
	equalRecords(t, got.records, after)
	for _, path := range []string{oldSnap, oldSeg} {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s left after Open: %v", path, err)
		}
	}
}
