package journal

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// writeString returns a snapshot writer producing s.
func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// delta rotates j and writes a delta holding s.
func delta(t *testing.T, j *Journal, s string) {
	t.Helper()
	if err := j.WriteDelta(context.Background(), j.Rotate(), writeString(s)); err != nil {
		t.Fatal(err)
	}
}

// TestDeltaChain: deltas after a snapshot are replayed after it, in order,
// then the records after the last one; a delta removes only the segments
// before it, a snapshot also the snapshot and deltas before it.
func TestDeltaChain(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	if err := j.WriteDelta(context.Background(), j.Rotate(), writeString("x")); err == nil {
		t.Fatal("a delta without a snapshot before it was written")
	}
	appendWait(t, j, []byte("one"))
	var mu sync.Mutex
	if err := j.Snapshot(context.Background(), &mu, func() func(io.Writer) error { return writeString("base") }); err != nil {
		t.Fatal(err)
	}
	appendWait(t, j, []byte("two"))
	delta(t, j, "d1")
	appendWait(t, j, []byte("three"))
	delta(t, j, "d2")
	appendWait(t, j, []byte("four"))
	j.Close()
	l := listNames(t, dir)
	if len(l.snapshots) != 1 || len(l.deltas) != 2 || l.segments[0] != l.deltas[1] {
		t.Fatalf("files %+v: want the snapshot, both deltas and the segments from the last delta on", l)
	}
	j, got := mustOpen(t, testOptions(dir, nil))
	if string(got.snapshot) != "base" || len(got.deltas) != 2 || string(got.deltas[0]) != "d1" || string(got.deltas[1]) != "d2" {
		t.Fatalf("replayed snapshot %q, deltas %q", got.snapshot, got.deltas)
	}
	equalRecords(t, got.records, [][]byte{[]byte("four")})
	if rep := j.Report(); len(rep.Deltas) != 2 {
		t.Fatalf("report %+v: want 2 deltas", rep)
	}
	// A delta after the replayed chain follows its last delta.
	delta(t, j, "d3")
	if err := j.Snapshot(context.Background(), &mu, func() func(io.Writer) error { return writeString("base2") }); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if l := listNames(t, dir); len(l.snapshots) != 1 || len(l.deltas) != 0 {
		t.Fatalf("files %+v: a new snapshot must supersede the old one and its deltas", l)
	}
}

// TestDeltaChainBroken: a delta that does not follow the one before it (a
// delta deleted), or one with no snapshot before it, stops Open; Recover
// sets it and the later ones aside.
func TestDeltaChainBroken(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	var mu sync.Mutex
	if err := j.Snapshot(context.Background(), &mu, func() func(io.Writer) error { return writeString("base") }); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"d1", "d2", "d3"} {
		appendWait(t, j, []byte(s))
		delta(t, j, s)
	}
	j.Close()
	l := listNames(t, dir)
	for _, tc := range []struct {
		name, remove, want string
	}{
		{"middle delta missing", deltaName(l.deltas[1]), "a delta is missing"},
		{"snapshot missing", snapshotName(l.snapshots[0]), "which is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := copyDir(t, dir)
			if err := os.Remove(filepath.Join(d, tc.remove)); err != nil {
				t.Fatal(err)
			}
			_, _, err := openReplay(t, testOptions(d, nil))
			var ce *CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("open: %v; want a CorruptError saying %q", err, tc.want)
			}
			opts := testOptions(d, nil)
			opts.Recover = true
			j, got, err := openReplay(t, opts)
			if err != nil {
				t.Fatalf("recover: %v", err)
			}
			defer j.Close()
			rep := j.Report()
			if len(rep.SetAside) == 0 {
				t.Fatalf("recover set nothing aside: %+v", rep)
			}
			if tc.name == "middle delta missing" && (len(got.deltas) != 1 || string(got.deltas[0]) != "d1" || len(rep.Missing) == 0) {
				t.Fatalf("recover loaded deltas %q (want d1), missing %v", got.deltas, rep.Missing)
			}
		})
	}
}

// TestDeltaFormatGolden pins the bytes of a delta file: a snapshot file
// (format 2) whose payload starts with the sequence number of the file it
// follows.
func TestDeltaFormatGolden(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir, nil)
	opts.ContentVersion = 7
	j, _ := mustOpen(t, opts)
	var mu sync.Mutex
	if err := j.Snapshot(context.Background(), &mu, func() func(io.Writer) error { return writeString("snapshot state") }); err != nil {
		t.Fatal(err)
	}
	appendWait(t, j, []byte("one"))
	delta(t, j, "delta state")
	j.Close()
	got, err := os.ReadFile(join(dir, deltaName(3)))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "format2-delta.bin")
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed:\n got %x\nwant %x", deltaName(3), got, want)
	}
}
