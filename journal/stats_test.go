package journal

import "testing"

// The group and fsync distributions add up to what was written.
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
	if st.SyncSeconds.Count == 0 || st.SyncSeconds.Count > st.Syncs {
		t.Errorf("fsync timings: %d, want between 1 and the %d fsyncs", st.SyncSeconds.Count, st.Syncs)
	}
}
