package journal

import (
	"context"
	"testing"
	"time"
)

// The group and fsync distributions add up to what was written, and a
// round that writes nothing (every round after a failure) is not a group.
func TestStatsDistributions(t *testing.T) {
	opts := testOptions(t.TempDir(), nil)
	opts.Sync = SyncGroup
	j, _ := mustOpen(t, opts)
	defer j.Close()
	appendWait(t, j, numbered("a", 0, 5)...)
	appendWait(t, j, numbered("b", 0, 3)...)
	st := j.Stats()
	if st.GroupRecords.Sum != 8 || st.GroupRecords.Count != st.Flushes || st.Flushes == 0 {
		t.Errorf("group records: sum %g over %d groups, want 8 records over the %d flushes", st.GroupRecords.Sum, st.GroupRecords.Count, st.Flushes)
	}
	if st.Waiters != 2 {
		t.Errorf("waiters = %d, want the 2 Wait calls that slept until their group was written", st.Waiters)
	}
	if st.SyncSeconds.Count == 0 || st.SyncSeconds.Count > st.Syncs {
		t.Errorf("fsync timings: %d, want between 1 and the %d fsyncs", st.SyncSeconds.Count, st.Syncs)
	}

	closeSegmentFiles(j)
	if err := j.Wait(context.Background(), j.Append([]byte("fails"))); err == nil {
		t.Fatal("Wait after the segment's files were closed: nil, want the write's error")
	}
	// A full buffer still starts a round (Append), which writes nothing.
	big := j.Append(make([]byte, unwrittenLimit))
	roundOver := func() bool {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.taken >= big && j.roundDone == nil
	}
	for deadline := time.Now().Add(10 * time.Second); !roundOver(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the flusher did not take the record appended after the failure")
		}
	}
	after := j.Stats()
	if after.Flushes != st.Flushes || after.GroupRecords.Sum != st.GroupRecords.Sum || after.Syncs != st.Syncs || after.Waiters != st.Waiters {
		t.Errorf("after a failed write: %d groups of %g records, %d fsyncs and %d waiters, want the %d, %g, %d and %d written before it",
			after.Flushes, after.GroupRecords.Sum, after.Syncs, after.Waiters, st.Flushes, st.GroupRecords.Sum, st.Syncs, st.Waiters)
	}
}
