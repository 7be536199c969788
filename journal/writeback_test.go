package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
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
