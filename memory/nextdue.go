package memory

import (
	"context"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

var _ coordinate.DueReporter = (*namespace)(nil)

// NextDue is when the expiry pass next has work: the earliest delayed unit
// or lease of state.due (due.go), or a worker's expiry that gives its
// leases back. It costs O(1) under the namespace lock. after is not
// needed: whatever came due by now, the pass (run by begin) has done.
func (ns *namespace) NextDue(ctx context.Context, after time.Time) (_ time.Time, _ bool, err error) {
	if _, err := ns.begin(ctx); err != nil {
		return time.Time{}, false, err
	}
	defer ns.end(ctx, &err)
	t, ok := ns.st.nextDue()
	if !ok {
		return time.Time{}, false, nil
	}
	return time.Unix(0, t), true, nil
}

// nextDue is the earliest time the expiry pass has something to do.
func (s *state) nextDue() (int64, bool) {
	var t int64
	ok := false
	if len(s.due) > 0 {
		t, ok = s.due[0].due, true
	}
	if w, wok := s.workers.nextExpiry(); wok && (!ok || w < t) {
		t, ok = w, true
	}
	return t, ok
}
