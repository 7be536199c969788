package journal

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testOptions returns options for dir whose log lines land in logs.
func testOptions(dir string, logs *syncBuffer) Options {
	if logs == nil {
		logs = &syncBuffer{}
	}
	return Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(logs, nil))}
}

// replayed is what a Replay delivered.
type replayed struct {
	snapshot []byte   // nil if loadSnapshot was not called
	deltas   [][]byte // the deltas' payloads, in order
	records  [][]byte
}

// openReplay opens dir and replays it, copying what it delivers.
func openReplay(t testing.TB, opts Options) (*Journal, replayed, error) {
	t.Helper()
	j, err := Open(opts)
	if err != nil {
		return nil, replayed{}, err
	}
	var got replayed
	err = j.ReplayWith(ReplayFuncs{Snapshot: func(r io.Reader, _ SnapshotInfo) error {
		b, err := io.ReadAll(r)
		got.snapshot = b
		return err
	}, Delta: func(r io.Reader, _ SnapshotInfo) error {
		b, err := io.ReadAll(r)
		got.deltas = append(got.deltas, b)
		return err
	}, Apply: func(rec []byte, _ uint32) error {
		got.records = append(got.records, bytes.Clone(rec))
		return nil
	}})
	if err != nil {
		j.Close()
		return nil, got, err
	}
	return j, got, nil
}

// mustOpen is openReplay failing the test on error; the journal is closed
// at the end of the test if the test did not close it.
func mustOpen(t testing.TB, opts Options) (*Journal, replayed) {
	t.Helper()
	j, got, err := openReplay(t, opts)
	if err != nil {
		t.Fatalf("open/replay %s: %v", opts.Dir, err)
	}
	t.Cleanup(func() { j.Close() })
	return j, got
}

// appendWait appends each record and waits for the last.
func appendWait(t testing.TB, j *Journal, recs ...[]byte) {
	t.Helper()
	var last Ticket
	for _, r := range recs {
		last = j.Append(r)
	}
	if err := j.Wait(context.Background(), last); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// numbered returns records "<prefix><i>" for i in [from, to).
func numbered(prefix string, from, to int) [][]byte {
	var out [][]byte
	for i := from; i < to; i++ {
		out = append(out, fmt.Appendf(nil, "%s%d", prefix, i))
	}
	return out
}

// equalRecords fails unless got equals want record for record.
func equalRecords(t testing.TB, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("replayed %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d = %q, want %q", i, got[i], want[i])
		}
	}
}

// copyDir copies the regular files of src into a new directory: the state a
// crash (kill -9) would leave, taken while the journal is still open.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// frameOffsets returns the offset of every frame of a segment, scanning it
// with the journal's own reader (up to a preallocated zero tail).
func frameOffsets(t testing.TB, path string, seq uint64) []int64 {
	t.Helper()
	f, fr, err := openFrames(path, segmentMagic, seq)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	defer f.Close()
	var offs []int64
	for {
		off := fr.off
		if _, err := fr.next(); err == io.EOF {
			return offs
		} else if zero, _ := zeroFrom(path, off); zero {
			return offs
		} else if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		offs = append(offs, off)
	}
}

// listNames returns the segment and snapshot numbers in dir.
func listNames(t testing.TB, dir string) listing {
	t.Helper()
	l, err := listDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// setMark overwrites both mark slots of segment seq with m.
func setMark(t testing.TB, path string, seq uint64, m mark) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for slot := range 2 {
		if err := writeSlot(f, seq, slot, m); err != nil {
			t.Fatal(err)
		}
	}
}

// readMark returns the mark of segment seq.
func readMark(t testing.TB, path string, seq uint64) mark {
	t.Helper()
	f, fr, err := openFrames(path, segmentMagic, seq)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	f.Close()
	return fr.hdr.mark
}

// appendFrame appends the frame of payload to dst.
func appendFrame(dst, payload []byte) []byte {
	h := frameHeader(payload)
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

// closeSegmentFiles closes the descriptors of the segment being written,
// so that the flusher's next write fails. The flusher must be idle.
func closeSegmentFiles(j *Journal) {
	j.seg.f.Close()
	if j.seg.dsync != nil {
		j.seg.dsync.Close()
	}
}
