package journal

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// fileSize returns the size of path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// usedEnd returns the end of the last frame of a segment: where its
// records stop and, in a live segment, the zeros begin.
func usedEnd(t *testing.T, path string, seq uint64) int64 {
	t.Helper()
	f, fr, err := openFrames(path, segmentMagic, seq)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	defer f.Close()
	for {
		off := fr.off
		if _, err := fr.next(); err != nil {
			return off
		}
	}
}

// A live segment is zero-filled ahead of its records; a crash leaves it so.
// Recovery reads the zeros as the clean end: every record, no torn tail, no
// warning, and the zeros are cut off.
func TestPreallocatedSegmentRecordsThenZeros(t *testing.T) {
	recs := numbered("record-", 0, 50)
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	appendWait(t, j, recs...)
	crashed := copyDir(t, dir) // while open: what kill -9 leaves
	j.Close()

	seg := join(crashed, segmentName(1))
	used := usedEnd(t, seg, 1)
	if size := fileSize(t, seg); size < used+firstPreallocStep/2 {
		t.Fatalf("live segment is %d bytes, records end at %d: no zeros preallocated", size, used)
	}
	logs := &syncBuffer{}
	j, got := mustOpen(t, testOptions(crashed, logs))
	equalRecords(t, got.records, recs)
	if r := j.Report(); r.TornTail != "" || r.TruncatedSize != 0 {
		t.Errorf("preallocated end reported as torn: %+v", r)
	}
	if l := logs.String(); strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
		t.Errorf("preallocated end logged as a problem:\n%s", l)
	}
	if size := fileSize(t, seg); size != used {
		t.Errorf("old segment is %d bytes after recovery, want its used length %d", size, used)
	}
	if r := j.Report(); r.Bytes != used {
		t.Errorf("Report.Bytes = %d, want %d", r.Bytes, used)
	}
	appendWait(t, j, []byte("after"))
	j.Close()
	_, got = mustOpen(t, testOptions(crashed, nil))
	equalRecords(t, got.records, append(recs[:len(recs):len(recs)], []byte("after")))
}

// A crash right after a new segment was created and preallocated, before
// any record reached it: the segment holds a header and zeros only.
func TestCrashAfterPreallocation(t *testing.T) {
	recs := numbered("r", 0, 3)
	dir, _ := writeSegment1(t, recs)
	s, err := createSegment(dir, 2, 0, DefaultPreallocate)
	if err != nil {
		t.Fatal(err)
	}
	s.f.Close() // no finish: the zeros stay, as after a crash
	if size := fileSize(t, join(dir, segmentName(2))); size <= headerSize {
		t.Fatalf("new segment is %d bytes: nothing preallocated", size)
	}
	logs := &syncBuffer{}
	j, got := mustOpen(t, testOptions(dir, logs))
	equalRecords(t, got.records, recs)
	if r := j.Report(); r.TornTail != "" {
		t.Errorf("TornTail = %q for a preallocated empty segment", r.TornTail)
	}
	if l := logs.String(); strings.Contains(l, "level=WARN") {
		t.Errorf("warning for a preallocated empty segment:\n%s", l)
	}
	appendWait(t, j, []byte("more"))
	j.Close()
	if l := listNames(t, dir); len(l.segments) != 3 {
		t.Fatalf("segments %v, want 1, 2 (empty) and 3", l.segments)
	}
	_, got = mustOpen(t, testOptions(dir, nil))
	equalRecords(t, got.records, append(recs[:3:3], []byte("more")))
}

// Zeros are only the clean end of the last segment: an earlier segment was
// cut to its used length before the next one began, so zeros after its
// records mean damage, reported at the first zero frame.
func TestZerosAfterRecordsOfEarlierSegmentAreCorruption(t *testing.T) {
	recs := numbered("r", 0, 6)
	dir := twoSessions(t, recs, 3)
	seg1 := join(dir, segmentName(1))
	end := fileSize(t, seg1)
	f, err := os.OpenFile(seg1, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 4096))
	f.Close()
	_, _, err = openReplay(t, testOptions(dir, nil))
	wantCorrupt(t, err, seg1, end)
}

// Records larger than the zeros ahead are written (the file grows), and
// preallocation catches up by growing steps; the finished segment is cut
// to exactly its records.
func TestPreallocationGrowsAndCloseTruncates(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	big := make([]byte, 3*firstPreallocStep)
	for i := range big {
		big[i] = byte(i%251) + 1
	}
	var recs [][]byte
	for i := range 4 {
		rec := append([]byte{byte(i)}, big...)
		recs = append(recs, rec)
		appendWait(t, j, rec)
	}
	// The flusher starts a step after publishing a round; the step runs
	// beside the next rounds, so the zeros appear soon after.
	appendWait(t, j, []byte("small"))
	recs = append(recs, []byte("small"))
	seg := join(dir, segmentName(1))
	used := usedEnd(t, seg, 1)
	for deadline := time.Now().Add(10 * time.Second); fileSize(t, seg) <= used; {
		if time.Now().After(deadline) {
			t.Fatalf("segment %d bytes, records end at %d: no zeros ahead after growth", fileSize(t, seg), used)
		}
		time.Sleep(time.Millisecond)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if size := fileSize(t, seg); size != used {
		t.Errorf("closed segment is %d bytes, want its used length %d", size, used)
	}
	_, got := mustOpen(t, testOptions(dir, nil))
	equalRecords(t, got.records, recs)
}

// With preallocation disabled, segments grow with each write and hold no
// zeros at any time.
func TestPreallocationDisabled(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir, nil)
	opts.Preallocate = -1
	j, _ := mustOpen(t, opts)
	recs := numbered("r", 0, 10)
	appendWait(t, j, recs...)
	seg := join(dir, segmentName(1))
	if size, used := fileSize(t, seg), usedEnd(t, seg, 1); size != used {
		t.Errorf("segment %d bytes, want exactly its records (%d)", size, used)
	}
}

// Preallocation steps run on a goroutine of their own beside the rounds
// (segment.go, startZeros). With small steps, many of them run while
// records of every size are written, some past the zeros; a copy taken
// while the journal is open (what kill -9 leaves) and the closed journal
// both replay every record: no step wrote zeros over a record, and the
// closed segment is cut to its records.
func TestPreallocationStepsBesideRecords(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncGroup, SyncNone} {
		t.Run(policy.String(), func(t *testing.T) {
			dir := t.TempDir()
			opts := testOptions(dir, nil)
			opts.Sync, opts.Preallocate = policy, 4*firstPreallocStep
			j, _ := mustOpen(t, opts)
			var recs [][]byte
			for i := range 400 {
				rec := bytes.Repeat([]byte{byte(i%250) + 1}, 1+(i*7919)%(firstPreallocStep/2))
				recs = append(recs, rec)
				if i%3 == 0 {
					appendWait(t, j, rec)
				} else {
					j.Append(rec)
				}
			}
			appendWait(t, j, []byte("last"))
			recs = append(recs, []byte("last"))
			crashed := copyDir(t, dir)
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			seg := join(dir, segmentName(1))
			if size, used := fileSize(t, seg), usedEnd(t, seg, 1); size != used {
				t.Errorf("closed segment is %d bytes, want its used length %d", size, used)
			}
			for _, d := range []string{dir, crashed} {
				_, got := mustOpen(t, testOptions(d, nil))
				equalRecords(t, got.records, recs)
			}
		})
	}
}
