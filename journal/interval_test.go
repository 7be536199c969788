package journal

import (
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
