package journal

import (
	"os"
	"testing"
	"time"
)

func TestParseSync(t *testing.T) {
	for _, tc := range []struct {
		in       string
		policy   SyncPolicy
		interval time.Duration
		bad      bool
	}{
		{in: "group", policy: SyncGroup},
		{in: "none", policy: SyncNone},
		{in: "interval=50ms", policy: SyncInterval, interval: 50 * time.Millisecond},
		{in: "interval=2s", policy: SyncInterval, interval: 2 * time.Second},
		{in: "interval=0s", bad: true},
		{in: "interval=-1s", bad: true},
		{in: "interval=", bad: true},
		{in: "interval=soon", bad: true},
		{in: "interval", bad: true},
		{in: "always", bad: true},
	} {
		p, d, err := ParseSync(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseSync(%q) = %v %v, want an error", tc.in, p, d)
			}
			continue
		}
		if err != nil || p != tc.policy || d != tc.interval {
			t.Errorf("ParseSync(%q) = %v %v %v, want %v %v", tc.in, p, d, err, tc.policy, tc.interval)
		}
		if s := FormatSync(p, d); s != tc.in {
			t.Errorf("FormatSync(ParseSync(%q)) = %q", tc.in, s)
		}
	}
	if _, err := Open(Options{Dir: t.TempDir(), Sync: SyncInterval}); err == nil {
		t.Error("Open accepted SyncInterval without an interval")
	}
}

// TestSyncIntervalAcknowledgesWritten: under SyncInterval a record is
// acknowledged once written to the operating system, without an fsync of
// its own, and survives the process dying.
func TestSyncIntervalAcknowledgesWritten(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir, nil)
	opts.Sync, opts.SyncInterval = SyncInterval, time.Hour
	j, _ := mustOpen(t, opts)
	before := j.Stats().Syncs
	recs := numbered("r", 0, 50)
	for _, r := range recs {
		appendWait(t, j, r)
		if !segmentHolds(t, join(dir, segmentName(1)), r) {
			t.Fatalf("record %q not written when its Wait returned", r)
		}
	}
	if n := j.Stats().Syncs - before; n != 0 {
		t.Fatalf("%d fsyncs for records acknowledged within one interval, want none", n)
	}
	crash := copyDir(t, dir) // killed now: the OS has every record
	_, got := mustOpen(t, testOptions(crash, nil))
	equalRecords(t, got.records, recs)
}

// TestSyncIntervalSyncsLater: a write is fsynced within the interval even
// if nothing else happens, so what a power loss can take is bounded.
func TestSyncIntervalSyncsLater(t *testing.T) {
	opts := testOptions(t.TempDir(), nil)
	opts.Sync, opts.SyncInterval = SyncInterval, 5*time.Millisecond
	j, _ := mustOpen(t, opts)
	before := j.Stats().Syncs
	appendWait(t, j, []byte("one"))
	deadline := time.Now().Add(30 * time.Second) // generous: the box is shared
	for j.Stats().Syncs == before {
		if time.Now().After(deadline) {
			t.Fatal("no fsync followed a write under SyncInterval")
		}
		time.Sleep(time.Millisecond)
	}
}

// Under SyncInterval a power cut may lose what was acknowledged in the
// last interval, but what survives is a prefix and the next start takes it
// (docs/persistence.md, "What is guaranteed"). The header page with the
// mark may reach the disk before the data pages (writeback keeps no
// order), so the mark must claim only what a sync made durable: had it
// covered the unsynced records, the start below would refuse ("records
// up to byte offset N were acknowledged, but they stop here").
func TestSyncIntervalMarkWaitsForTheSync(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir, nil)
	opts.Sync, opts.SyncInterval = SyncInterval, time.Hour
	j, _ := mustOpen(t, opts)
	defer j.Close()
	recs := numbered("record-with-some-padding-to-fill-pages-", 0, 300)
	for _, r := range recs {
		appendWait(t, j, r) // acknowledged: written, not synced
	}
	seg := join(dir, segmentName(1))
	if offs := frameOffsets(t, seg, 1); len(offs) != len(recs) || offs[len(offs)-1] <= 4096 {
		t.Fatalf("%d frames, want %d reaching past the first page", len(offs), len(recs))
	}
	if m := readMark(t, seg, 1); m.end > headerSize {
		t.Fatalf("mark %+v covers records no sync made durable", m)
	}
	// The disk after a power cut: page 0 (header and mark) written back,
	// the later pages not (they read as the zeros preallocated and synced
	// when the segment was created).
	img, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	clear(img[4096:])
	cut := t.TempDir()
	if err := os.WriteFile(join(cut, segmentName(1)), img, 0o600); err != nil {
		t.Fatal(err)
	}
	j2, got, err := openReplay(t, testOptions(cut, nil))
	if err != nil {
		t.Fatalf("the start after a power cut under -sync interval refused: %v", err)
	}
	defer j2.Close()
	if len(got.records) == 0 || len(got.records) == len(recs) {
		t.Fatalf("%d records after the cut, want those of the first page only", len(got.records))
	}
	equalRecords(t, got.records, recs[:len(got.records)])
}

// Under SyncInterval the mark still follows the records, one sync behind:
// once the interval's sync ran it covers every record written before it.
func TestSyncIntervalMarkFollowsTheSync(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir, nil)
	opts.Sync, opts.SyncInterval = SyncInterval, 5*time.Millisecond
	j, _ := mustOpen(t, opts)
	defer j.Close()
	appendWait(t, j, []byte("one"), []byte("two"))
	seg := join(dir, segmentName(1))
	offs := frameOffsets(t, seg, 1)
	wantEnd := offs[1] + frameHeaderSize + 3
	m := readMark(t, seg, 1)
	for deadline := time.Now().Add(30 * time.Second); m.end < wantEnd && time.Now().Before(deadline); m = readMark(t, seg, 1) {
		time.Sleep(time.Millisecond)
	}
	if m.end != wantEnd {
		t.Fatalf("mark after the interval's sync = %+v, want end %d", m, wantEnd)
	}
}
