package memory

import (
	"context"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// TestReadyUntilJournalFails: a memory backend is ready, volatile or not,
// until its journal fails.
func TestReadyUntilJournalFails(t *testing.T) {
	ctx := context.Background()
	volatile := New(Options{})
	defer volatile.Close()
	if err := volatile.Ready(ctx); err != nil {
		t.Errorf("volatile backend not ready: %v", err)
	}
	b := openPersistent(t, t.TempDir(), coordinate.NewFakeClock(time.Unix(1e9, 0)), 0)
	if err := b.Ready(ctx); err != nil {
		t.Fatalf("fresh persistent backend not ready: %v", err)
	}
	b.wal.fail()
	if err := b.Ready(ctx); err == nil {
		t.Error("backend with a failed journal reports ready")
	}
}
