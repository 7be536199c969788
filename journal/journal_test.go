package journal

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func TestRoundTripManyRecords(t *testing.T) {
	dir := t.TempDir()
	j, got := mustOpen(t, testOptions(dir, nil))
	if got.snapshot != nil || len(got.records) != 0 {
		t.Fatalf("fresh journal replayed %+v", got)
	}
	var want [][]byte
	for i := range 3000 {
		// Sizes from 0 to ~9 KiB, content depending on i.
		rec := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, (i*37)%4700)
		want = append(want, rec)
	}
	appendWait(t, j, want...)
	if err := j.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	_, got = mustOpen(t, testOptions(dir, nil))
	if got.snapshot != nil {
		t.Fatalf("loadSnapshot called without a snapshot")
	}
	equalRecords(t, got.records, want)
}

func TestReplayOrderAcrossSessions(t *testing.T) {
	dir := t.TempDir()
	var want [][]byte
	for session := range 4 {
		j, got := mustOpen(t, testOptions(dir, nil))
		equalRecords(t, got.records, want)
		recs := numbered(string(rune('a'+session)), 0, 50)
		appendWait(t, j, recs...)
		want = append(want, recs...)
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Each session writes into a new segment: 1..4 plus the one Open makes.
	if l := listNames(t, dir); len(l.segments) != 4 || l.segments[0] != 1 || l.segments[3] != 4 {
		t.Fatalf("segments = %v, want [1 2 3 4]", l.segments)
	}
	_, got := mustOpen(t, testOptions(dir, nil))
	equalRecords(t, got.records, want)
}

func TestCloseFlushesAndLaterAppendsReportClosed(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncGroup, SyncNone} {
		t.Run(policy.String(), func(t *testing.T) {
			dir := t.TempDir()
			opts := testOptions(dir, nil)
			opts.Sync = policy
			j, _ := mustOpen(t, opts)
			t1 := j.Append([]byte("before close"))
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			if err := j.Wait(context.Background(), t1); err != nil {
				t.Fatalf("Wait for a record appended before Close: %v", err)
			}
			t2 := j.Append([]byte("after close"))
			if err := j.Wait(context.Background(), t2); !errors.Is(err, ErrClosed) {
				t.Fatalf("Wait for a record appended after Close = %v, want ErrClosed", err)
			}
			_, got := mustOpen(t, opts)
			equalRecords(t, got.records, [][]byte{[]byte("before close")})
		})
	}
}

func TestSecondOpenOfALockedDirectoryFails(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	if _, err := Open(testOptions(dir, nil)); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open = %v, want an in-use error", err)
	}
	j.Close()
	j2, _ := mustOpen(t, testOptions(dir, nil))
	j2.Close()
}

func TestAppendBeforeReplayPanics(t *testing.T) {
	j, err := Open(testOptions(t.TempDir(), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer func() {
		if recover() == nil {
			t.Fatal("Append before Replay did not panic")
		}
	}()
	j.Append([]byte("x"))
}

func TestReplayApplyErrorNamesTheRecord(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	appendWait(t, j, numbered("r", 0, 3)...)
	j.Close()

	j, err := Open(testOptions(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	boom := errors.New("boom")
	noSnapshot := func(io.Reader, SnapshotInfo) error { return errors.New("loadSnapshot called without a snapshot") }
	err = j.Replay(noSnapshot, func(rec []byte, _ uint32) error {
		if string(rec) == "r1" {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), segmentName(1)) {
		t.Fatalf("Replay = %v, want boom naming %s", err, segmentName(1))
	}
}

func TestWaitHonoursContext(t *testing.T) {
	j, _ := mustOpen(t, testOptions(t.TempDir(), nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A ticket never handed out cannot become durable; Wait must give up.
	if err := j.Wait(ctx, j.Append([]byte("x"))+1000); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
}

// After a failed write the journal acknowledges nothing more: every Wait,
// and Close, report the failure.
func TestWriteFailureIsSticky(t *testing.T) {
	j, _ := mustOpen(t, testOptions(t.TempDir(), nil))
	appendWait(t, j, []byte("ok"))
	// The flusher is idle (its last round happened before Wait returned):
	// pull the file out from under it.
	closeSegmentFiles(j)
	t1 := j.Append([]byte("lost"))
	err := j.Wait(context.Background(), t1)
	if err == nil || !strings.Contains(err.Error(), segmentName(1)) {
		t.Fatalf("Wait after a failed write = %v, want an error naming %s", err, segmentName(1))
	}
	if err2 := j.Wait(context.Background(), j.Append([]byte("also lost"))); err2 == nil {
		t.Fatal("Wait succeeded after the journal failed")
	}
	if cerr := j.Close(); cerr == nil {
		t.Fatal("Close did not report the write failure")
	}
}

// Check reports, without waiting, what Wait would fail with: nothing for a
// record that will be written, ErrClosed after Close, the write failure
// once the journal failed.
func TestCheck(t *testing.T) {
	j, _ := mustOpen(t, testOptions(t.TempDir(), nil))
	if err := j.Check(j.Append([]byte("pending"))); err != nil {
		t.Fatalf("Check of a fresh record = %v, want nil", err)
	}
	appendWait(t, j, []byte("ok"))
	closeSegmentFiles(j) // the next write fails
	failing := j.Append([]byte("lost"))
	if err := j.Wait(context.Background(), failing); err == nil {
		t.Fatal("Wait after the file was closed succeeded")
	}
	if err := j.Check(j.Append([]byte("after failure"))); err == nil || errors.Is(err, ErrClosed) {
		t.Fatalf("Check after a write failure = %v, want the failure", err)
	}

	j2, _ := mustOpen(t, testOptions(t.TempDir(), nil))
	j2.Close()
	if err := j2.Check(j2.Append([]byte("after close"))); !errors.Is(err, ErrClosed) {
		t.Fatalf("Check after Close = %v, want ErrClosed", err)
	}
}

// Once a write or sync failed, Close leaves the segment as it is: no final
// mark, no sync, no truncation. A sync after a failed one can succeed
// with the failed pages dropped (Linux reports a writeback error once),
// so a final mark would claim records that are not on disk and the next
// start would refuse them as lost. Here the records' O_DSYNC descriptor
// fails while the file's own still works, which a finish would use.
func TestCloseAfterFailureLeavesTheSegment(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	appendWait(t, j, []byte("ok"))
	if j.seg.dsync == nil {
		t.Skip("no O_DSYNC descriptor on this platform: the records' writes cannot fail alone")
	}
	seg := join(dir, segmentName(1))
	before, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	// The flusher marks "ok" acknowledged just after releasing its
	// waiter: wait for that mark, so that the one compared below is the
	// last the journal wrote before failing.
	okEnd := int64(headerSize + frameHeaderSize + len("ok"))
	markBefore := readMark(t, seg, 1)
	for deadline := time.Now().Add(10 * time.Second); markBefore.end != okEnd; markBefore = readMark(t, seg, 1) {
		if time.Now().After(deadline) {
			t.Fatalf("mark %+v, never covering the acknowledged record (end %d)", markBefore, okEnd)
		}
		time.Sleep(time.Millisecond)
	}
	j.seg.dsync.Close() // the flusher is idle: its next write fails
	if err := j.Wait(context.Background(), j.Append([]byte("lost"))); err == nil {
		t.Fatal("Wait after the failed write succeeded")
	}
	if err := j.Close(); err == nil {
		t.Fatal("Close did not report the failure")
	}
	after, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != before.Size() {
		t.Errorf("segment size %d after Close, want %d: a failed journal's segment was finished", after.Size(), before.Size())
	}
	if m := readMark(t, seg, 1); m != markBefore {
		t.Errorf("mark %+v after Close, want %+v", m, markBefore)
	}
}
