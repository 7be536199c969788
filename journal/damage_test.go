package journal

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Damage to acknowledged records is never taken for a torn write
// (docs/persistence.md): each probe starts from 400 acknowledged records and the
// files a kill -9 leaves (copied while the journal is open).

// killedAfter400 returns a copy of a directory whose journal acknowledged
// 400 records one by one (each Wait returned) and was then killed, and the
// path of the segment holding them.
func killedAfter400(t *testing.T, restartFirst bool) (string, string, [][]byte) {
	t.Helper()
	dir := t.TempDir()
	if restartFirst {
		j, _ := mustOpen(t, testOptions(dir, nil))
		j.Close()
	}
	j, _ := mustOpen(t, testOptions(dir, nil))
	recs := numbered("unit-", 0, 400)
	for _, r := range recs {
		appendWait(t, j, r)
	}
	killed := copyDir(t, dir)
	j.Close()
	l := listNames(t, killed)
	last := l.segments[len(l.segments)-1]
	return killed, join(killed, segmentName(last)), recs
}

func TestHugeLengthInAcknowledgedRecordStopsStart(t *testing.T) {
	dir, seg, recs := killedAfter400(t, false)
	offs := frameOffsets(t, seg, 1)
	b, _ := os.ReadFile(seg)
	binary.LittleEndian.PutUint32(b[offs[201]:], 0x7fff_fff0) // record 202's length
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, got, err := openReplay(t, testOptions(dir, nil))
	wantCorrupt(t, err, seg, offs[201])
	if !strings.Contains(err.Error(), "acknowledged") {
		t.Errorf("error does not say acknowledged records are lost: %v", err)
	}
	if len(got.records) != 201 {
		t.Errorf("applied %d records before the damage, want 201", len(got.records))
	}

	// -recover keeps the 201 and names what it drops.
	logs := &syncBuffer{}
	opts := testOptions(dir, logs)
	opts.Recover = true
	j, got := mustOpen(t, opts)
	equalRecords(t, got.records, recs[:201])
	if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, seg) || !strings.Contains(l, "dropped") {
		t.Errorf("recovery did not name what it dropped:\n%s", l)
	}
	j.Close()
	_, got = mustOpen(t, testOptions(dir, nil)) // consistent again
	equalRecords(t, got.records, recs[:201])
}

func TestTruncatedAcknowledgedRecordStopsStart(t *testing.T) {
	dir, seg, _ := killedAfter400(t, false)
	offs := frameOffsets(t, seg, 1)
	for _, cut := range []int64{offs[201] + 5, offs[201]} { // inside record 202, and at its start
		if err := os.Truncate(seg, cut); err != nil {
			t.Fatal(err)
		}
		_, _, err := openReplay(t, testOptions(dir, nil))
		wantCorrupt(t, err, seg, offs[201])
	}
}

func TestDeletedNewestSegmentStopsStart(t *testing.T) {
	dir, seg, _ := killedAfter400(t, true)
	if !strings.HasSuffix(seg, segmentName(2)) {
		t.Fatalf("records went to %s, want segment 2 (after a clean restart)", seg)
	}
	if err := os.Remove(seg); err != nil {
		t.Fatal(err)
	}
	_, _, err := openReplay(t, testOptions(dir, nil))
	wantCorrupt(t, err, seg, 0)

	logs := &syncBuffer{}
	opts := testOptions(dir, logs)
	opts.Recover = true
	j, _ := mustOpen(t, opts)
	if m := j.Report().Missing; len(m) != 1 || m[0] != seg {
		t.Errorf("Report().Missing = %v, want [%s]", m, seg)
	}
	if !strings.Contains(logs.String(), seg) {
		t.Errorf("recovery did not name the missing segment:\n%s", logs)
	}
	appendWait(t, j, []byte("after"))
	j.Close()
	_, got := mustOpen(t, testOptions(dir, nil))
	equalRecords(t, got.records, [][]byte{[]byte("after")})
}

// A snapshot names the segment that continues it: deleting that segment
// (with the records appended after the snapshot) stops the start.
func TestDeletedSegmentAfterSnapshotStopsStart(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	appendWait(t, j, numbered("before-", 0, 3)...)
	var mu sync.Mutex
	if err := j.Snapshot(context.Background(), &mu, func() func(w io.Writer) error {
		return func(w io.Writer) error { _, err := w.Write([]byte("state")); return err }
	}); err != nil {
		t.Fatal(err)
	}
	appendWait(t, j, numbered("after-", 0, 3)...)
	killed := copyDir(t, dir)
	j.Close()
	l := listNames(t, killed)
	if len(l.snapshots) != 1 || len(l.segments) != 1 || l.segments[0] != l.snapshots[0] {
		t.Fatalf("directory holds %+v, want one snapshot and its segment", l)
	}
	seg := join(killed, segmentName(l.segments[0]))
	os.Remove(seg)
	_, err := Open(testOptions(killed, nil))
	wantCorrupt(t, err, seg, 0)
}

// switchSegment creates the new segment before sealing the old one: a
// crash in between leaves an unsealed segment followed by an empty one,
// which is accepted; an unsealed segment followed by records is not.
func TestUnsealedSegmentFollowedByEmptyOneIsAccepted(t *testing.T) {
	recs := numbered("r", 0, 4)
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	appendWait(t, j, recs...)
	j.Close()
	j, _ = mustOpen(t, testOptions(dir, nil)) // seals 1, creates 2
	crashed := copyDir(t, dir)
	j.Close()
	seg1 := join(crashed, segmentName(1))
	m := readMark(t, seg1, 1)
	if !m.sealed {
		t.Fatalf("segment 1 not sealed after a restart: %+v", m)
	}
	setMark(t, seg1, 1, mark{end: m.end}) // the seal never made it
	_, got := mustOpen(t, testOptions(crashed, nil))
	equalRecords(t, got.records, recs)

	// Followed by a segment with records, the missing seal is damage.
	j, _ = mustOpen(t, testOptions(dir, nil)) // seals 2, creates 3
	appendWait(t, j, []byte("in 3"))
	crashed = copyDir(t, dir)
	j.Close()
	seg2 := join(crashed, segmentName(2))
	setMark(t, seg2, 2, mark{end: readMark(t, seg2, 2).end})
	_, _, err := openReplay(t, testOptions(crashed, nil))
	wantCorrupt(t, err, seg2, slotOffset)
}

// A torn write after the last acknowledged record is still repaired with
// a warning: the mark is written only after the group is acknowledged.
func TestMarkFollowsAcknowledgements(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	seg := join(dir, segmentName(1))
	appendWait(t, j, []byte("one"), []byte("two"))
	offs := frameOffsets(t, seg, 1)
	if len(offs) != 2 {
		t.Fatalf("%d frames, want 2", len(offs))
	}
	wantEnd := offs[1] + frameHeaderSize + 3
	// The flusher writes the mark right after it releases the waiters
	// (flusher.go, markAcknowledged), so appendWait may return first:
	// wait for the mark, which must reach the records' end and never
	// pass it.
	m := readMark(t, seg, 1)
	for deadline := time.Now().Add(10 * time.Second); m.end < wantEnd && time.Now().Before(deadline); m = readMark(t, seg, 1) {
		time.Sleep(time.Millisecond)
	}
	if m.end != wantEnd || m.sealed {
		t.Fatalf("mark after two acknowledged records = %+v, want end %d, open", m, wantEnd)
	}
	j.Append([]byte("three, not waited for"))
	j.Close()
	if m := readMark(t, seg, 1); m.end <= wantEnd {
		t.Fatalf("mark after Close = %+v, want past %d", m, wantEnd)
	}
}

// The directory itself is locked: removing files from it (a LOCK file of
// format 1, or anything else) does not let a second journal in.
func TestDirectoryLockSurvivesDeletedFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(join(dir, "LOCK"), nil, 0o600); err != nil { // left by format 1
		t.Fatal(err)
	}
	j, _ := mustOpen(t, testOptions(dir, nil))
	os.Remove(join(dir, "LOCK"))
	if j2, err := Open(testOptions(dir, nil)); err == nil {
		j2.Close()
		t.Fatal("a second journal opened a locked directory")
	} else if !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open: %v, want an in-use error", err)
	}
	j.Close()
	j2, _ := mustOpen(t, testOptions(dir, nil))
	j2.Close()
}

// A directory written by journal format 1 (20-byte headers, no marks, a
// LOCK file) still replays; its records report content version 0.
func TestFormat1DirectoryReplays(t *testing.T) {
	dir := t.TempDir()
	h := make([]byte, headerSizeV1)
	copy(h, segmentMagic)
	binary.LittleEndian.PutUint32(h[4:], formatV1)
	binary.LittleEndian.PutUint64(h[8:], 1)
	binary.LittleEndian.PutUint32(h[16:], crc32.Checksum(h[:16], castagnoli))
	recs := numbered("old-", 0, 3)
	b := h
	for _, r := range recs {
		b = appendFrame(b, r)
	}
	if err := os.WriteFile(join(dir, segmentName(1)), b, 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(join(dir, "LOCK"), nil, 0o600)
	j, err := Open(testOptions(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	err = j.Replay(func(io.Reader, SnapshotInfo) error { return nil }, func(rec []byte, content uint32) error {
		if content != 0 {
			t.Errorf("format 1 record reported content version %d, want 0", content)
		}
		got = append(got, append([]byte(nil), rec...))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	equalRecords(t, got, recs)
	appendWait(t, j, []byte("new"))
	j.Close()
	_, rep := mustOpen(t, testOptions(dir, nil))
	equalRecords(t, rep.records, append(recs[:3:3], []byte("new")))
}
