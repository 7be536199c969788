package postgres

import (
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// newTwoSpecEnv is a fastEnv with specs a (weight 1) and b (weight 10),
// ten units each: every get_work reads both (no guess), and the weights
// choose b until a weighs more.
func newTwoSpecEnv(t *testing.T) *fastEnv {
	e := newFastEnv(t)
	e.spec(map[string]any{"name": "a", "weight": 1})
	e.spec(map[string]any{"name": "b", "weight": 10})
	e.add("a", numbered(10)...)
	e.add("b", numbered(10)...)
	return e
}

// wantWork asks for one unit (of the specs in filter; nil: any) and fails
// the test unless it is want ("spec/key").
func (e *fastEnv) wantWork(t *testing.T, what string, filter []string, want string) {
	t.Helper()
	if got := specsOf(e.getWork(filter, 1)); got != want {
		t.Fatalf("%s: get_work gave %s, want %s", what, got, want)
	}
}

// decodedSpecRows returns how many spec rows the scheduler's reads
// decoded since the last call.
func (e *fastEnv) decodedSpecRows() int64 {
	return e.ns.(*watchedNamespace).ns.specRows.decoded.Swap(0)
}

// TestSpecRowsFollowChanges: the scheduler's reads decode a spec row
// once per version (specrows.go), and every change of a spec's settings
// (control_work_spec, set_work_spec) is what the next read chooses by.
func TestSpecRowsFollowChanges(t *testing.T) {
	e := newTwoSpecEnv(t)
	ctx := t.Context()
	step := func(what, want string, decoded int64) {
		t.Helper()
		e.wantWork(t, what, nil, want)
		if n := e.decodedSpecRows(); n != decoded {
			t.Errorf("%s: the read decoded %d spec rows, want %d", what, n, decoded)
		}
	}
	// Two specs with units: every get_work reads (no guess).
	step("first read", "b/u00000", 2)
	step("same rows", "b/u00001", 0)
	yes, no := true, false
	if err := e.ns.ControlWorkSpec(ctx, "b", coordinate.WorkSpecControl{Paused: &yes}); err != nil {
		t.Fatal(err)
	}
	// b is not read at all while paused; a is the only spec: the next
	// get_work reads, the one after it guesses a.
	step("b paused", "a/u00000", 0)
	if err := e.ns.ControlWorkSpec(ctx, "b", coordinate.WorkSpecControl{Paused: &no}); err != nil {
		t.Fatal(err)
	}
	// The guess of a fails (b has units again) and the read sees b's new
	// version.
	step("b resumed", "b/u00002", 1)
	weight := 100
	if err := e.ns.ControlWorkSpec(ctx, "a", coordinate.WorkSpecControl{Weight: &weight}); err != nil {
		t.Fatal(err)
	}
	step("a weighs more", "a/u00001", 1)
	e.spec(map[string]any{"name": "b", "weight": 10, "priority": 1})
	step("b's priority set", "b/u00003", 1)
	step("nothing changed", "b/u00004", 0)
}

// awaitHorizon waits until the cluster's xmin horizon has passed every version
// of the namespace's spec rows, as seen from a new snapshot. A read sends
// a row's settings while its version is not older than the horizon of
// the read before (specrows.go), and the horizon is the cluster's: a
// transaction of another test, or another package's tests on the same
// server, can hold it back, and the reads would then rightly send the
// settings again. Before a read whose horizon a later step relies on,
// the tests wait for the horizon rather than count on it.
func (e *fastEnv) awaitHorizon(t *testing.T) {
	t.Helper()
	ns := e.ns.(*watchedNamespace).ns
	deadline := time.Now().Add(30 * time.Second)
	for {
		var newer int
		err := ns.b.pool.QueryRow(t.Context(), `SELECT count(*) FROM work_spec
			WHERE namespace_id = $1 AND age(xmin) <= age(xid(pg_snapshot_xmin(pg_current_snapshot())))`, ns.id).Scan(&newer)
		if err != nil {
			t.Fatal(err)
		}
		if newer == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spec rows stayed newer than the cluster's xmin horizon for 30 s: a transaction elsewhere holds it", newer)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sentSpecRows returns how many rows the scheduler's reads received with
// their settings, and how many reads missed, since the last call.
func (e *fastEnv) sentSpecRows() (sent, missed int64) {
	rows := &e.ns.(*watchedNamespace).ns.specRows
	return rows.sent.Swap(0), rows.missed.Swap(0)
}

// TestSpecRowsSentOnce: a read sends a row's settings only when its
// version is not older than the last read's horizon (specrows.go), so a
// version the daemon decoded is not sent again, and a new one is.
func TestSpecRowsSentOnce(t *testing.T) {
	e := newTwoSpecEnv(t)
	ctx := t.Context()
	step := func(what, want string, sent int64) {
		t.Helper()
		e.awaitHorizon(t)
		e.wantWork(t, what, nil, want)
		if n, missed := e.sentSpecRows(); n != sent || missed != 0 {
			t.Errorf("%s: the read received %d rows with their settings and missed %d times, want %d and 0", what, n, missed, sent)
		}
	}
	step("first read", "b/u00000", 2)
	step("same rows", "b/u00001", 0)
	step("same rows again", "b/u00002", 0)
	weight := 100
	if err := e.ns.ControlWorkSpec(ctx, "a", coordinate.WorkSpecControl{Weight: &weight}); err != nil {
		t.Fatal(err)
	}
	step("a weighs more", "a/u00000", 1)
	step("nothing changed", "a/u00001", 0)
	e.spec(map[string]any{"name": "b", "weight": 10, "priority": 1})
	step("b's priority set", "b/u00003", 1)
	step("nothing changed since", "b/u00004", 0)
	// Another filter has a horizon of its own: its first read sends all.
	e.awaitHorizon(t)
	e.wantWork(t, "filtered read", []string{"a"}, "a/u00002")
	if n, missed := e.sentSpecRows(); n != 1 || missed != 0 {
		t.Errorf("filtered read: %d rows with their settings, %d misses, want 1 and 0", n, missed)
	}
}

// TestSpecRowsMissReadsAgain: a row sent without its settings at a
// version the daemon does not have (here: the map dropped, as when it
// outgrows maxSpecRows) makes the read miss, and the scheduler reads
// again with every row's settings before choosing.
func TestSpecRowsMissReadsAgain(t *testing.T) {
	e := newTwoSpecEnv(t)
	e.awaitHorizon(t)
	e.wantWork(t, "first read", nil, "b/u00000")
	e.sentSpecRows()
	e.decodedSpecRows()
	rows := &e.ns.(*watchedNamespace).ns.specRows
	rows.mu.Lock()
	rows.rows = nil
	rows.mu.Unlock()
	e.awaitHorizon(t)
	e.wantWork(t, "after the miss", nil, "b/u00001")
	if n, missed := e.sentSpecRows(); n != 2 || missed != 1 {
		t.Errorf("the read missed %d times and received %d rows with their settings, want 1 and 2", missed, n)
	}
	if n := e.decodedSpecRows(); n != 2 {
		t.Errorf("the reads decoded %d rows, want 2", n)
	}
	e.awaitHorizon(t)
	e.wantWork(t, "after the read again", nil, "b/u00002")
	if n, missed := e.sentSpecRows(); n != 0 || missed != 0 {
		t.Errorf("the next read missed %d times and received %d rows with their settings, want 0 and 0", missed, n)
	}
}
