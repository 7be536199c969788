package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// heldWrite is a group write stopped in writeGate until the test releases
// it: nil writes it, an error fails it.
type heldWrite struct {
	off     int64
	buf     []byte
	release chan error
}

// writeGate replaces Journal.writeGroup: each write waits to be released
// (or, once the test ends, goes through, so a failed test's Close does not
// hang on a held write).
type writeGate struct {
	writes chan *heldWrite
	quit   chan struct{}
}

// newWriteGate opens and replays an empty journal in dir whose group
// writes go through a new gate.
func newWriteGate(t *testing.T, dir string) (*Journal, *writeGate) {
	g := &writeGate{writes: make(chan *heldWrite), quit: make(chan struct{})}
	j := openWithWriter(t, testOptions(dir, nil), g.write)
	t.Cleanup(func() { close(g.quit) }) // before the journal's Close
	return j, g
}

func (g *writeGate) write(f *os.File, buf []byte, off int64) error {
	w := &heldWrite{off: off, buf: bytes.Clone(buf), release: make(chan error)}
	select {
	case g.writes <- w:
	case <-g.quit:
		return writeAt(f, buf, off)
	}
	select {
	case err := <-w.release:
		if err != nil {
			return err
		}
	case <-g.quit:
	}
	return writeAt(f, buf, off)
}

// openWithWriter opens and replays an empty journal whose group writes go
// through write.
func openWithWriter(t *testing.T, opts Options, write func(*os.File, []byte, int64) error) *Journal {
	t.Helper()
	j, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	j.writeGroup = write
	if err := j.Replay(func(io.Reader, SnapshotInfo) error { return nil }, func([]byte, uint32) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return j
}

// waitAsync runs Wait(t) on its own goroutine.
func waitAsync(j *Journal, t Ticket) chan error {
	ch := make(chan error, 1)
	go func() { ch <- j.Wait(context.Background(), t) }()
	return ch
}

// overlapTwo starts a group write held in the gate (the flusher's, for a
// first waiter) and, while it is held, a second waiter's: the second
// waiter writes its own group beside the first. It returns both held
// writes and the waiters' results.
func overlapTwo(t *testing.T, j *Journal, g *writeGate) (a, b *heldWrite, w1, w2 chan error, t2 Ticket) {
	t.Helper()
	w1 = waitAsync(j, j.Append([]byte("first group, one record")))
	a = <-g.writes
	j.Append([]byte("second group, record 1"))
	t2 = j.Append([]byte("second group, record 2"))
	w2 = waitAsync(j, t2)
	b = <-g.writes
	return a, b, w1, w2, t2
}

// The second group's write starts while the first one's is in flight, and
// covers the first group's bytes too; when it returns first, nothing is
// acknowledged (no Wait returns, the durable ticket and the mark stay)
// until the first write returns. A crash in between leaves either write's
// bytes on disk, and only the second's (the later group reaching the disk
// first) replays both groups; a torn second write is a torn tail.
func TestOverlappedGroupsPublishInOrder(t *testing.T) {
	dir := t.TempDir()
	j, g := newWriteGate(t, dir)
	seg := join(dir, segmentName(1))
	a, b, w1, w2, t2 := overlapTwo(t, j, g)
	if b.off != a.off || !bytes.HasPrefix(b.buf, a.buf) || len(b.buf) <= len(a.buf) {
		t.Fatalf("the overlapping write covers %d bytes at %d, want the first write's %d bytes at %d and its own after them",
			len(b.buf), b.off, len(a.buf), a.off)
	}
	crash := copyDir(t, dir) // neither write has reached the file

	b.release <- nil // the later group's write returns first
	for {
		j.mu.Lock()
		r, durable := j.roundOfLocked(t2), j.durable
		written := r == nil || r.written
		j.mu.Unlock()
		if durable >= t2 || r == nil {
			t.Fatalf("the second group was published (durable %d, want < %d) before the first group's write returned", durable, t2)
		}
		if written {
			break
		}
		runtime.Gosched()
	}
	select {
	case err := <-w1:
		t.Fatalf("the first group's Wait returned %v before its write did", err)
	case err := <-w2:
		t.Fatalf("the second group's Wait returned %v before the first group's write did", err)
	default:
	}
	if m := readMark(t, seg, 1); m.end > a.off {
		t.Fatalf("mark at %d claims records past %d, whose write has not returned", m.end, a.off)
	}

	a.release <- nil
	for i, w := range []chan error{w1, w2} {
		if err := <-w; err != nil {
			t.Fatalf("Wait of group %d: %v", i+1, err)
		}
	}
	st := j.Stats()
	if st.Flushes != 2 || st.Overlapped != 1 || st.Waiters != 2 || st.GroupRecords.Sum != 3 {
		t.Errorf("stats: %d groups (%d overlapped) of %g records releasing %d waiters, want 2 (1) of 3 releasing 2",
			st.Flushes, st.Overlapped, st.GroupRecords.Sum, st.Waiters)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	all := [][]byte{[]byte("first group, one record"), []byte("second group, record 1"), []byte("second group, record 2")}
	for _, c := range []struct {
		name  string
		bytes int // of the second write on disk
		want  int // records replayed
	}{
		{"only the later write", len(b.buf), 3},
		{"the later write torn inside the earlier group", len(a.buf) / 2, 0},
		{"the later write torn inside its own records", len(a.buf) + 20, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := copyDir(t, crash)
			f, err := os.OpenFile(join(d, segmentName(1)), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(b.buf[:c.bytes], b.off); err != nil {
				t.Fatal(err)
			}
			f.Close()
			j, got := mustOpen(t, testOptions(d, nil))
			equalRecords(t, got.records, all[:c.want])
			if torn := j.Report().TornTail; (torn != "") != (c.bytes < len(b.buf)) {
				t.Errorf("TornTail = %q with %d of the %d bytes written", torn, c.bytes, len(b.buf))
			}
		})
	}
}

// A failed write fails its group and every later one, even a later group
// whose own (overlapping) write succeeded, and nothing it wrote is claimed
// after Close.
func TestOverlappedWriteFailureFailsLaterGroups(t *testing.T) {
	dir := t.TempDir()
	j, g := newWriteGate(t, dir)
	a, b, w1, w2, _ := overlapTwo(t, j, g)
	b.release <- nil
	fire := errors.New("disk on fire")
	a.release <- fire
	for i, w := range []chan error{w1, w2} {
		if err := <-w; !errors.Is(err, fire) {
			t.Errorf("Wait of group %d = %v, want the first write's failure", i+1, err)
		}
	}
	if err := j.Wait(context.Background(), j.Append([]byte("later"))); !errors.Is(err, fire) {
		t.Errorf("Wait after the failure = %v, want it", err)
	}
	if st := j.Stats(); st.Flushes != 0 {
		t.Errorf("%d groups counted after a failed first write, want 0", st.Flushes)
	}
	if err := j.Close(); !errors.Is(err, fire) {
		t.Errorf("Close = %v, want the failure", err)
	}
	_, got := mustOpen(t, testOptions(dir, nil))
	equalRecords(t, got.records, nil)
}

// recordingWriter passes group writes through and records where they went.
type recordingWriter struct {
	mu     sync.Mutex
	writes [][2]int64 // offset, length
	delay  time.Duration
}

func (w *recordingWriter) write(f *os.File, buf []byte, off int64) error {
	w.mu.Lock()
	w.writes = append(w.writes, [2]int64{off, int64(len(buf))})
	w.mu.Unlock()
	time.Sleep(w.delay) // widens the window in which writes overlap
	return writeAt(f, buf, off)
}

// A lone caller never overlaps: one group, one write, each starting where
// the last ended.
func TestLoneWaiterWritesOneGroupAtATime(t *testing.T) {
	w := &recordingWriter{}
	j := openWithWriter(t, testOptions(t.TempDir(), nil), w.write)
	for _, rec := range numbered("lone-", 0, 20) {
		appendWait(t, j, rec)
	}
	st := j.Stats()
	if st.Flushes != 20 || st.Overlapped != 0 {
		t.Errorf("%d groups, %d overlapped; want 20 and 0", st.Flushes, st.Overlapped)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.writes) != 20 {
		t.Fatalf("%d writes for 20 groups", len(w.writes))
	}
	for i := 1; i < len(w.writes); i++ {
		if prev := w.writes[i-1]; w.writes[i][0] != prev[0]+prev[1] {
			t.Fatalf("write %d at %d, want %d (right after the previous one)", i, w.writes[i][0], prev[0]+prev[1])
		}
	}
}

// Many writers with rotations and frequent preallocation steps, group
// writes overlapping (2 or 3 in flight): every Wait's record is in the
// files when it returns, a crash copy taken while open and the journal
// after Close both replay everything in append order.
func TestOverlappedWritesWithRotationAndPreallocation(t *testing.T) {
	for _, inFlight := range []int{2, 3} {
		t.Run(fmt.Sprint(inFlight), func(t *testing.T) {
			const writers, perWriter = 8, 60
			dir := t.TempDir()
			opts := testOptions(dir, nil)
			opts.SyncsInFlight = inFlight
			opts.Preallocate = 4 << 10 // a step every few groups
			w := &recordingWriter{delay: 200 * time.Microsecond}
			j := openWithWriter(t, opts, w.write)

			var (
				stateMu sync.Mutex
				next    int
				wg      sync.WaitGroup
				errs    = make(chan error, writers)
			)
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := range perWriter {
						stateMu.Lock()
						rec := fmt.Appendf(nil, "%06d w%d k%d", next, i, k)
						next++
						tk := j.Append(rec)
						if next%97 == 0 {
							j.Rotate()
						}
						stateMu.Unlock()
						if err := j.Wait(context.Background(), tk); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			st := j.Stats()
			if st.Overlapped == 0 {
				t.Errorf("no group write overlapped another (%d groups)", st.Flushes)
			}
			t.Logf("%d groups, %d overlapped, %.1f waiters per group", st.Flushes, st.Overlapped, float64(st.Waiters)/float64(st.Flushes))

			check := func(d string) {
				t.Helper()
				_, got := mustOpen(t, testOptions(d, nil))
				if len(got.records) != writers*perWriter {
					t.Fatalf("replayed %d records, want %d", len(got.records), writers*perWriter)
				}
				for i, rec := range got.records {
					if want := fmt.Sprintf("%06d ", i); !bytes.HasPrefix(rec, []byte(want)) {
						t.Fatalf("record %d is %q: replay order differs from append order", i, rec)
					}
				}
			}
			check(copyDir(t, dir))
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			check(dir)
		})
	}
}

// Close with an overlapping write in flight waits for it: both groups are
// acknowledged and replayed, and the segment is finished after them.
func TestCloseDrainsOverlappedWrites(t *testing.T) {
	dir := t.TempDir()
	j, g := newWriteGate(t, dir)
	a, b, w1, w2, _ := overlapTwo(t, j, g)
	closed := make(chan error, 1)
	go func() { closed <- j.Close() }()
	a.release <- nil
	for range 100 {
		runtime.Gosched()
	}
	b.release <- nil
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	for i, w := range []chan error{w1, w2} {
		if err := <-w; err != nil {
			t.Errorf("Wait of group %d: %v", i+1, err)
		}
	}
	j2, got := mustOpen(t, testOptions(dir, nil))
	if len(got.records) != 3 || j2.Report().TornTail != "" {
		t.Errorf("replayed %d records (torn tail %q), want the 3 acknowledged and a clean end", len(got.records), j2.Report().TornTail)
	}
}

// The other policies, and SyncsInFlight 1, write one group at a time.
func TestOverlapOnlyUnderSyncGroup(t *testing.T) {
	for _, c := range []struct {
		sync     SyncPolicy
		inFlight int
	}{{SyncNone, 2}, {SyncInterval, 2}, {SyncGroup, 1}} {
		t.Run(fmt.Sprintf("%v,%d", c.sync, c.inFlight), func(t *testing.T) {
			opts := testOptions(t.TempDir(), nil)
			opts.Sync, opts.SyncInterval, opts.SyncsInFlight = c.sync, time.Millisecond, c.inFlight
			w := &recordingWriter{}
			j := openWithWriter(t, opts, w.write)
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for _, rec := range numbered(fmt.Sprintf("w%d-", i), 0, 20) {
						appendWait(t, j, rec)
					}
				}()
			}
			wg.Wait()
			if st := j.Stats(); st.Overlapped != 0 {
				t.Errorf("%d overlapped groups, want none", st.Overlapped)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if len(w.writes) != 0 {
				t.Errorf("%d writes through the overlapping path, want none", len(w.writes))
			}
		})
	}
	if _, err := Open(Options{Dir: t.TempDir(), SyncsInFlight: -1}); err == nil {
		t.Error("Open accepted a negative SyncsInFlight")
	}
}
