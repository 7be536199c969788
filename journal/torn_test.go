package journal

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// writeSegment1 creates a journal in a new directory holding recs in
// segment 1 and closes it. It returns the directory and the segment path.
func writeSegment1(t *testing.T, recs [][]byte) (string, string) {
	t.Helper()
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	appendWait(t, j, recs...)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, join(dir, segmentName(1))
}

// writeSegment1Torn is writeSegment1 with the last record unacknowledged:
// the segment's mark is set back to the start of that record, as if the
// process died while writing it. Only then can damage to it be a torn
// write.
func writeSegment1Torn(t *testing.T, recs [][]byte) (string, string) {
	t.Helper()
	dir, seg := writeSegment1(t, recs)
	offs := frameOffsets(t, seg, 1)
	setMark(t, seg, 1, mark{end: offs[len(offs)-1]})
	return dir, seg
}

// TestTornTailTruncatedAtEveryOffset cuts the last record of the last
// segment at every byte offset: each time the earlier records replay, the
// cut is logged with file and offset, the file is truncated, and the
// journal keeps working.
func TestTornTailTruncatedAtEveryOffset(t *testing.T) {
	recs := numbered("record-with-some-length-", 0, 5)
	_, seg := writeSegment1Torn(t, recs)
	offs := frameOffsets(t, seg, 1)
	lastStart := offs[len(offs)-1]
	full, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}

	for cut := lastStart + 1; cut < int64(len(full)); cut++ {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			dir := t.TempDir()
			path := join(dir, segmentName(1))
			if err := os.WriteFile(path, full[:cut], 0o600); err != nil {
				t.Fatal(err)
			}
			logs := &syncBuffer{}
			j, got := mustOpen(t, testOptions(dir, logs))
			equalRecords(t, got.records, recs[:4])
			if want := fmt.Sprintf("%s@%d", path, lastStart); j.Report().TornTail != want {
				t.Errorf("TornTail = %q, want %q", j.Report().TornTail, want)
			}
			if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, path) ||
				!strings.Contains(l, fmt.Sprintf("offset=%d", lastStart)) {
				t.Errorf("no warning naming %s offset %d in logs:\n%s", path, lastStart, l)
			}
			if st, err := os.Stat(path); err != nil || st.Size() != lastStart {
				t.Errorf("segment not truncated to %d: %v %v", lastStart, st.Size(), err)
			}
			appendWait(t, j, []byte("after repair"))
			j.Close()
			_, got = mustOpen(t, testOptions(dir, nil))
			equalRecords(t, got.records, append(recs[:4:4], []byte("after repair")))
		})
	}
}

func TestTornTailBadChecksumAtEndOrZeroFill(t *testing.T) {
	recs := numbered("r", 0, 4)
	for name, damage := range map[string]func([]byte) []byte{
		"flipped last byte": func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b },
		"last payload zeroed, zeros after": func(b []byte) []byte {
			clear(b[len(b)-2:])
			return append(b, make([]byte, 100)...)
		},
		"zeros over last": func(b []byte) []byte {
			clear(b[len(b)-6:])
			return b
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, seg := writeSegment1Torn(t, recs)
			b, _ := os.ReadFile(seg)
			if err := os.WriteFile(seg, damage(b), 0o600); err != nil {
				t.Fatal(err)
			}
			j, got := mustOpen(t, testOptions(dir, nil))
			equalRecords(t, got.records, recs[:3])
			if j.Report().TornTail == "" {
				t.Fatal("no torn tail reported")
			}
		})
	}
}

// A segment whose header was never completely written is the torn end of
// the journal when it is the last one.
func TestTornHeaderOfLastSegment(t *testing.T) {
	recs := numbered("r", 0, 3)
	dir, _ := writeSegment1(t, recs)
	seg2 := join(dir, segmentName(2))
	if err := os.WriteFile(seg2, encodeHeader(segmentMagic, 2, 0)[:7], 0o600); err != nil {
		t.Fatal(err)
	}
	j, got := mustOpen(t, testOptions(dir, nil))
	equalRecords(t, got.records, recs)
	appendWait(t, j, []byte("more"))
	j.Close()
	_, got = mustOpen(t, testOptions(dir, nil))
	equalRecords(t, got.records, append(recs[:3:3], []byte("more")))
}
