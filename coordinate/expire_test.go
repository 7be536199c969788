package coordinate

import (
	"strings"
	"testing"
	"time"
)

func TestExpireLease(t *testing.T) {
	now := time.Unix(1000, 0)
	w := &Name{Bytes: "w", Text: true}
	held := UnitState{Status: StatusPending, Data: EmptyMap, Expiration: now.Add(-time.Second), Worker: w}
	if !LeaseExpired(held.Expiration, now) || LeaseExpired(now, now) {
		t.Error("a lease expires strictly after its expiry")
	}
	for _, tc := range []struct {
		attempts, maxRetries int
		fail                 bool
	}{{1, 0, false}, {50, 0, false}, {2, 2, false}, {3, 2, true}} {
		st := ExpireLease(held, tc.attempts, tc.maxRetries, now)
		switch {
		case tc.fail:
			if st.Status != StatusFailed || !st.Expiration.Equal(now) || st.Worker != w ||
				!strings.Contains(string(st.Data), TracebackTooManyRetries) {
				t.Errorf("attempts %d of %d: %+v, want FAILED now, worker kept, traceback", tc.attempts, tc.maxRetries, st)
			}
		default:
			if st.Status != StatusAvailable || !st.Expiration.IsZero() || st.Worker != nil || string(st.Data) != string(EmptyMap) {
				t.Errorf("attempts %d of %d: %+v, want AVAILABLE with no lease", tc.attempts, tc.maxRetries, st)
			}
		}
	}
}
