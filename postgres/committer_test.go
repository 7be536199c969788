package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// TestRequestsAfterCloseAreAnswered: a request made as or after the
// backend closes gets the closed backend's error, never waits for an
// answer nobody will give. Queueing it may succeed even then (submit's
// select finds both the queue and the closed stop channel ready and may
// take either) after the committer's workers drained the queue and left;
// push then answers what is queued itself.
func TestRequestsAfterCloseAreAnswered(t *testing.T) {
	b, err := New(t.Context(), freshSchema(t), Options{MaxConns: 2}) // closed below, once
	if err != nil {
		t.Fatal(err)
	}
	ns, err := b.Namespace(t.Context(), "")
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	b.Close()
	for i := range 50 {
		// Bounds the test: a request left queued waits until then.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := ns.UpdateWorkUnit(ctx, "s", "a", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
		cancel()
		if !errors.Is(err, errBackendClosed) {
			t.Fatalf("update %d after Close: %v, want %v", i, err, errBackendClosed)
		}
	}
}
