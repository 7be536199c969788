package postgres

import (
	"sync/atomic"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// Finishing a FAILED unit (finish wins over fail) blocks its dependents
// again, then resolves its edges in the batch's last round trip: the
// dependents become AVAILABLE and the namespace's work listeners are
// called once that round trip's results are read. A FAILED unit with no
// dependents finishes without a call.
func TestRefinishWakesWorkListeners(t *testing.T) {
	ctx := t.Context()
	_, ns := openBackend(t, freshSchema(t), Options{})
	raw, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns.SetWorkSpec(ctx, raw); err != nil {
		t.Fatal(err)
	}
	err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{
		{Key: textName("a"), Data: coordinate.Null},
		{Key: textName("lone"), Data: coordinate.Null},
		{Key: textName("d"), Data: coordinate.Null, DependsOn: []coordinate.UnitRef{{Spec: "s", Key: "a"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var woken atomic.Int32
	ns.(coordinate.WorkNotifier).NotifyWork(func() { woken.Add(1) })
	update := func(key string, s coordinate.Status) {
		t.Helper()
		if err := ns.UpdateWorkUnit(ctx, "s", key, statusUpdate(s)); err != nil {
			t.Fatalf("update s/%s to %v: %v", key, s, err)
		}
	}
	status := func(key string) coordinate.Status {
		t.Helper()
		us, err := ns.GetWorkUnits(ctx, "s", []string{key})
		if err != nil || len(us) != 1 || us[0] == nil {
			t.Fatalf("GetWorkUnits(s/%s) = %v, %v", key, us, err)
		}
		return us[0].Status
	}
	update("a", coordinate.StatusFailed)
	update("lone", coordinate.StatusFailed)
	if got := status("d"); got != coordinate.StatusFailed {
		t.Fatalf("s/d = %v after its dependency failed, want failed", got)
	}
	woken.Store(0)
	update("lone", coordinate.StatusFinished)
	if n := woken.Load(); n != 0 {
		t.Errorf("finishing failed s/lone, without dependents, called the listeners %d times", n)
	}
	update("a", coordinate.StatusFinished)
	if got := status("d"); got != coordinate.StatusAvailable {
		t.Errorf("s/d = %v after its failed dependency finished, want available", got)
	}
	if woken.Load() == 0 {
		t.Error("finishing failed s/a unblocked s/d but called no work listener")
	}
}
