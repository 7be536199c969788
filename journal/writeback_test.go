package journal

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
)

// A snapshot written through pacedFile is the bytes written, in order,
// across many windows and writes that straddle them; on Linux the windows
// before the last were handed to writeback.
func TestPacedFileWritesEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paced")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	p := newPacedFile(f, 0)
	var want bytes.Buffer
	for i := 0; want.Len() < 4*writebackWindow+12345; i++ {
		b := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 40_000+i%777)
		if n, err := p.Write(b); err != nil || n != len(b) {
			t.Fatalf("Write = %d, %v", n, err)
		}
		want.Write(b)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("file holds %d bytes differing from the %d written", len(got), want.Len())
	}
	if runtime.GOOS == "linux" {
		if p.plain || p.completed < 2*writebackWindow || p.started <= p.completed {
			t.Errorf("windows written back up to %d, started up to %d (plain %v): want pacing of at least two windows", p.completed, p.started, p.plain)
		}
	}
}

// Writes pacedFile cannot pace (to a device the kernel refuses
// sync_file_range for) still go through whole.
func TestPacedFileFallsBackToPlainWrites(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pacing exists on Linux only; elsewhere every write is plain (writeback_other.go)")
	}
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := newPacedFile(f, 0)
	b := bytes.Repeat([]byte{7}, writebackWindow+1)
	for range 3 {
		if n, err := p.Write(b); err != nil || n != len(b) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if !p.plain {
		t.Errorf("pacing %s did not fall back to plain writes", os.DevNull)
	}
}

func TestRemoveFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: the steps cost no disk, the path through them is the same.
	if err := f.Truncate(3*removeStep + 5); err != nil {
		t.Fatal(err)
	}
	f.Close()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{big, small, filepath.Join(dir, "missing")} {
		if err := removeFile(path); err != nil {
			t.Errorf("removeFile(%s): %v", filepath.Base(path), err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", filepath.Base(path), err)
		}
	}
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(filepath.Join(sub, "inner"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := removeFile(sub); err == nil {
		t.Errorf("removeFile of a non-empty directory reported no error")
	}
}

// failWriteback makes waiting for a window's writeback report err, as
// sync_file_range does after the kernel failed to write the window's
// pages (and then no longer reports it to an fsync of that descriptor),
// until the test ends.
func failWriteback(t *testing.T, err error) {
	t.Helper()
	start, await := startWritebackFunc, awaitWritebackFunc
	startWritebackFunc = func(*os.File, int64, int64) error { return nil }
	awaitWritebackFunc = func(*os.File, int64, int64) error { return err }
	t.Cleanup(func() { startWritebackFunc, awaitWritebackFunc = start, await })
}

// A failed writeback reported while a snapshot is paced fails the
// snapshot: the fsync at its end would report success, so installing it
// would delete the segments it replaces for a file whose pages never
// reached the disk.
func TestSnapshotWritebackFailureIsNotInstalled(t *testing.T) {
	failWriteback(t, syscall.EIO)
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	recs := numbered("r", 0, 10)
	appendWait(t, j, recs...)
	var mu sync.Mutex
	big := bytes.Repeat([]byte{1}, 3*writebackWindow)
	err := j.Snapshot(context.Background(), &mu, func() func(io.Writer) error {
		return func(w io.Writer) error {
			_, err := w.Write(big)
			return err
		}
	})
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("snapshot written while its writeback failed: err = %v, want EIO", err)
	}
	if l := listNames(t, dir); len(l.snapshots) != 0 || len(l.temps) != 0 || len(l.segments) == 0 || l.segments[0] != 1 {
		t.Fatalf("after the failed snapshot the directory holds %+v; want the segments, no snapshot", l)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	_, got := mustOpen(t, testOptions(dir, nil))
	equalRecords(t, got.records, recs)
}

// A failed writeback reported while a preallocation step is paced fails
// the journal, as a failed sync does: the error may be that of records
// written through the same file, and no later sync reports it.
func TestPreallocationWritebackFailureFailsTheJournal(t *testing.T) {
	failWriteback(t, syscall.EIO)
	s, err := createSegment(t.TempDir(), 1, 0, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.step = 8 << 20 // the next step, 16 MiB, is paced
	s.startZeros(false)
	r, ended := s.takeZeros(true)
	if !ended || !errors.Is(r.syncErr, syscall.EIO) {
		t.Fatalf("preallocation step whose writeback failed ended with %+v (ended %v); want a sync error", r, ended)
	}
}

// Where sync_file_range cannot be used at all, pacing stops and the
// writes go on (the fsync at the end reports any failure).
func TestPacedFileWithoutPacingWritesOn(t *testing.T) {
	failWriteback(t, syscall.EINVAL)
	f, err := os.Create(filepath.Join(t.TempDir(), "paced"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := newPacedFile(f, 0)
	b := bytes.Repeat([]byte{7}, writebackWindow+1)
	for range 3 {
		if n, err := p.Write(b); err != nil || n != len(b) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if !p.plain {
		t.Error("pacing did not fall back to plain writes")
	}
}
