package journal

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// flipByte inverts one byte of a file.
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x5a
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// twoSessions writes recs[:split] in segment 1 and recs[split:] in segment
// 2 and returns the directory.
func twoSessions(t *testing.T, recs [][]byte, split int) string {
	t.Helper()
	dir := t.TempDir()
	for _, part := range [][][]byte{recs[:split], recs[split:]} {
		j, _ := mustOpen(t, testOptions(dir, nil))
		appendWait(t, j, part...)
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func wantCorrupt(t *testing.T, err error, file string, off int64) {
	t.Helper()
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("error = %v, want a *CorruptError", err)
	}
	if ce.File != file || ce.Offset != off {
		t.Fatalf("corruption reported at %s@%d, want %s@%d", ce.File, ce.Offset, file, off)
	}
	if !strings.Contains(err.Error(), file) {
		t.Fatalf("error text %q does not name %s", err, file)
	}
}

func TestMidFileCorruptionNamesFileAndOffset(t *testing.T) {
	recs := numbered("record-", 0, 6)
	dir, seg := writeSegment1(t, recs)
	offs := frameOffsets(t, seg, 1)
	flipByte(t, seg, offs[2]+frameHeaderSize+1) // inside record 2's payload

	_, got, err := openReplay(t, testOptions(dir, nil))
	wantCorrupt(t, err, seg, offs[2])
	equalRecords(t, got.records, recs[:2]) // applied before the damage was met

	// The directory was not modified: the same error again.
	_, _, err = openReplay(t, testOptions(dir, nil))
	wantCorrupt(t, err, seg, offs[2])
}

// Damage at the very end of a segment that is not the last one is not a
// torn tail: the segment was complete (fsynced) before the next began.
func TestDamagedEndOfEarlierSegmentIsCorruption(t *testing.T) {
	recs := numbered("r", 0, 6)
	dir := twoSessions(t, recs, 3)
	seg1 := join(dir, segmentName(1))
	st, _ := os.Stat(seg1)
	flipByte(t, seg1, st.Size()-1)
	offs := frameOffsets(t, join(dir, segmentName(2)), 2) // segment 2 intact
	if len(offs) != 3 {
		t.Fatalf("segment 2 has %d records, want 3", len(offs))
	}
	_, _, err := openReplay(t, testOptions(dir, nil))
	wantCorrupt(t, err, seg1, headerSize+2*(frameHeaderSize+2))
}

func TestMissingSegmentFailsOpen(t *testing.T) {
	recs := numbered("r", 0, 9)
	dir := t.TempDir()
	for _, part := range [][][]byte{recs[:3], recs[3:6], recs[6:]} {
		j, _ := mustOpen(t, testOptions(dir, nil))
		appendWait(t, j, part...)
		j.Close()
	}
	if err := os.Remove(join(dir, segmentName(2))); err != nil {
		t.Fatal(err)
	}
	_, err := Open(testOptions(dir, nil))
	wantCorrupt(t, err, join(dir, segmentName(2)), 0)

	// Recover keeps segment 1, sets 3 aside and continues after 1.
	opts := testOptions(dir, nil)
	opts.Recover = true
	j, got := mustOpen(t, opts)
	equalRecords(t, got.records, recs[:3])
	if n := len(j.Report().SetAside); n != 1 {
		t.Fatalf("set aside %v, want segment 3 only", j.Report().SetAside)
	}
	appendWait(t, j, []byte("new"))
	j.Close()
	_, got = mustOpen(t, testOptions(dir, nil))
	equalRecords(t, got.records, append(recs[:3:3], []byte("new")))
}

func TestRecoverKeepsThePrefix(t *testing.T) {
	recs := numbered("record-", 0, 8)
	dir := twoSessions(t, recs, 5)
	seg1 := join(dir, segmentName(1))
	offs := frameOffsets(t, seg1, 1)
	flipByte(t, seg1, offs[3]+frameHeaderSize)

	logs := &syncBuffer{}
	opts := testOptions(dir, logs)
	opts.Recover = true
	j, got := mustOpen(t, opts)
	equalRecords(t, got.records, recs[:3])
	rep := j.Report()
	if len(rep.SetAside) != 2 { // the copy of segment 1, and segment 2
		t.Fatalf("SetAside = %v, want 2 files", rep.SetAside)
	}
	for _, p := range rep.SetAside {
		if _, err := os.Stat(p); err != nil || !strings.Contains(p, damagedSuffix) {
			t.Fatalf("set-aside file %s: %v", p, err)
		}
	}
	if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, seg1) {
		t.Fatalf("recovery did not log what it dropped:\n%s", l)
	}
	appendWait(t, j, []byte("after recovery"))
	j.Close()

	// The directory is consistent again: no Recover needed.
	_, got = mustOpen(t, testOptions(dir, nil))
	equalRecords(t, got.records, append(recs[:3:3], []byte("after recovery")))
}

func TestRecoverDamagedHeader(t *testing.T) {
	recs := numbered("r", 0, 4)
	dir := twoSessions(t, recs, 2)
	flipByte(t, join(dir, segmentName(1)), 2) // magic
	_, _, err := openReplay(t, testOptions(dir, nil))
	wantCorrupt(t, err, join(dir, segmentName(1)), 0)

	opts := testOptions(dir, nil)
	opts.Recover = true
	j, got := mustOpen(t, opts)
	equalRecords(t, got.records, nil)
	appendWait(t, j, []byte("x"))
	j.Close()
	_, got = mustOpen(t, testOptions(dir, nil))
	equalRecords(t, got.records, [][]byte{[]byte("x")})
}
