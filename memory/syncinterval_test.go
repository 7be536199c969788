package memory

import (
	"context"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// TestSyncIntervalBackend: the backend passes -sync interval=DURATION to
// its journal, and what it acknowledged is there after a crash.
func TestSyncIntervalBackend(t *testing.T) {
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	opts := Options{Clock: clock, DataDir: dir, Sync: journal.SyncInterval, SyncInterval: time.Hour, Logger: quietLogger()}
	b, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ns := nsOf(t, b, "")
	defineSpec(t, context.Background(), ns, "s")
	if st := b.JournalStats(); st.Syncs != 0 {
		t.Fatalf("%d fsyncs within the first hour, want none", st.Syncs)
	}
	want := dumpAll(b)
	crash(t, b)
	b2, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if got := dumpAll(b2); got != want {
		t.Fatalf("recovered:\n%s\nwant:\n%s", got, want)
	}
}
