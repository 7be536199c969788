package memory

import (
	"context"
	"testing"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/coordinate/coordinatetest"
	"github.com/coordinated/coordinated/journal"
)

// TestConformancePersistent runs the conformance suite on a journaled
// backend, and when each test closes it, checks that the test's final
// state comes back identical from the journal alone (as after kill -9) and
// then from the snapshot a clean close writes.
func TestConformancePersistent(t *testing.T) {
	coordinatetest.Run(t, func(t *testing.T, c *coordinate.FakeClock) coordinate.Backend {
		opts := Options{Clock: c, DataDir: t.TempDir(), Sync: journal.SyncNone, Logger: quietLogger()}
		b, err := Open(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		return &reopenOnClose{Backend: b, t: t, opts: opts}
	})
}

// reopenOnClose is a journaled backend whose Close verifies recovery.
type reopenOnClose struct {
	*Backend
	t    *testing.T
	opts Options
}

func (r *reopenOnClose) Close() error {
	t := r.t
	want := dumpAll(r.Backend)
	crash(t, r.Backend)
	b, err := Open(context.Background(), r.opts)
	if err != nil {
		t.Fatalf("reopening after the test: %v", err)
	}
	if got := dumpAll(b); got != want {
		t.Errorf("state replayed from the journal differs:\n--- replayed\n%s\n--- live\n%s", got, want)
	}
	if err := b.Close(); err != nil {
		return err
	}
	if b, err = Open(context.Background(), r.opts); err != nil {
		t.Fatalf("reopening from the final snapshot: %v", err)
	}
	if rep := b.wal.j.Report(); rep.Snapshot == "" || rep.Records != 0 {
		t.Errorf("after a clean close want only a snapshot, recovery found %+v", rep)
	}
	if got := dumpAll(b); got != want {
		t.Errorf("state restored from the snapshot differs:\n--- restored\n%s\n--- live\n%s", got, want)
	}
	return b.Close()
}
