package migrate_test

import (
	"context"
	"reflect"
	"sort"
	"testing"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/internal/testdaemon"
	"github.com/coordinated/coordinated/migrate"
)

// unitState is everything observable about a unit through the legacy
// RPCs that migrate promises to keep.
type unitState struct {
	Status int
	Data   any
}

// snapshot reads every unit of every spec, with pending shown as
// available (what migrate turns it into).
func snapshot(t *testing.T, c *client.Client) map[string]map[string]unitState {
	ctx := context.Background()
	names, err := c.WorkSpecNames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]unitState{}
	for _, n := range names {
		units, err := c.GetWorkUnits(ctx, n, client.UnitsQuery{Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		keys := make([]any, len(units))
		for i, u := range units {
			keys[i] = u.Key
		}
		st, err := c.GetWorkUnitStatus(ctx, n, keys)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]unitState{}
		for i, u := range units {
			s := st[i].Status
			if s == client.Pending {
				s = client.Available
			}
			k, _ := client.Text(u.Key)
			if _, text := u.Key.(string); text {
				k = "u:" + k
			}
			m[k] = unitState{Status: s, Data: u.Data}
		}
		out[n] = m
	}
	return out
}

// queueOrder is the key order in which get_work would hand out the queued
// units.
func queueOrder(t *testing.T, c *client.Client, spec string, states ...int) []string {
	units, err := c.GetWorkUnits(context.Background(), spec, client.UnitsQuery{States: states, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, u := range units {
		k, _ := client.Text(u.Key)
		keys = append(keys, k)
	}
	return keys
}

func checkCopy(t *testing.T, src, dst *client.Client) {
	t.Helper()
	want, got := snapshot(t, src), snapshot(t, dst)
	if !reflect.DeepEqual(want, got) {
		t.Errorf("target differs from source:\nsource %v\ntarget %v", want, got)
	}
	if s, d := queueOrder(t, src, "ws1", client.Available, client.Pending), queueOrder(t, dst, "ws1", client.Available); !reflect.DeepEqual(s, d) {
		t.Errorf("dispatch order differs:\nsource %v\ntarget %v", s, d)
	}
	meta, err := dst.GetWorkSpecMeta(context.Background(), "ws3")
	if err != nil || meta.Status != client.Paused {
		t.Errorf("ws3 on the target: %+v, %v; want paused", meta, err)
	}
	diffs, err := migrate.Verify(context.Background(), src, dst, nil)
	if err != nil || len(diffs) != 0 {
		t.Errorf("Verify = %v, %v", diffs, err)
	}
}

func total(rs []migrate.SpecResult) (copied, unchanged, written int64) {
	for _, r := range rs {
		copied += r.Copied
		unchanged += r.Unchanged
		if r.SpecWritten {
			written++
		}
	}
	return
}

// TestFromPythonAndBack copies a live Python daemon's queue into ours (on
// both backends) in small pages, checks every unit and the dispatch
// order, re-runs (nothing copied), then copies ours into a fresh Python
// daemon (the rollback path) and checks again.
func TestFromPythonAndBack(t *testing.T) {
	for _, backend := range testdaemon.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			py := testdaemon.Dial(t, testdaemon.Python(t))
			testdaemon.Populate(t, py)
			ours := testdaemon.Dial(t, testdaemon.Ours(t, backend))
			var pages int
			res, err := migrate.Copy(ctx, py, ours, migrate.Options{PageSize: 4, Progress: func(migrate.Progress) { pages++ }})
			if err != nil {
				t.Fatal(err)
			}
			if copied, _, written := total(res); copied != 24 || written != 3 {
				t.Errorf("first copy: %d units, %d specs written; want 24 and 3 (%+v)", copied, written, res)
			}
			if pages < 6 {
				t.Errorf("%d pages for 21 units in pages of 4", pages)
			}
			checkCopy(t, py, ours)

			res, err = migrate.Copy(ctx, py, ours, migrate.Options{PageSize: 4})
			if err != nil {
				t.Fatal(err)
			}
			if copied, unchanged, written := total(res); copied != 0 || written != 0 || unchanged != 24 {
				t.Errorf("re-run copied %d units, wrote %d specs, %d unchanged; want 0, 0, 24", copied, written, unchanged)
			}

			back := testdaemon.Dial(t, testdaemon.Python(t))
			if _, err := migrate.Copy(ctx, ours, back, migrate.Options{}); err != nil {
				t.Fatal(err)
			}
			checkCopy(t, ours, back)
		})
	}
}

// TestPauseSourceAndVerifyDifferences: -pause-source pauses each copied
// spec on the source; Verify reports a unit missing on the target, and a
// spec missing altogether.
func TestPauseSourceAndVerifyDifferences(t *testing.T) {
	ctx := context.Background()
	src := testdaemon.Dial(t, testdaemon.Ours(t, "memory"))
	dst := testdaemon.Dial(t, testdaemon.Ours(t, "memory"))
	testdaemon.Populate(t, src)
	if _, err := migrate.Copy(ctx, src, dst, migrate.Options{Specs: []string{"ws1"}, PauseSource: true}); err != nil {
		t.Fatal(err)
	}
	meta, err := src.GetWorkSpecMeta(ctx, "ws1")
	if err != nil || meta.Status != client.Paused {
		t.Errorf("ws1 on the source after -pause-source: %+v, %v", meta, err)
	}
	// A re-run finds the source paused (by the first run): the target
	// stays runnable.
	if _, err := migrate.Copy(ctx, src, dst, migrate.Options{Specs: []string{"ws1"}, PauseSource: true}); err != nil {
		t.Fatal(err)
	}
	if meta, _ := dst.GetWorkSpecMeta(ctx, "ws1"); meta.Status != client.Runnable {
		t.Errorf("ws1 on the target: %+v, want runnable", meta)
	}
	if diffs, err := migrate.Verify(ctx, src, dst, []string{"ws1"}); err != nil || len(diffs) != 0 {
		t.Fatalf("Verify = %v, %v", diffs, err)
	}
	if _, err := dst.DelWorkUnits(ctx, "ws1", client.DelQuery{State: client.Failed}); err != nil {
		t.Fatal(err)
	}
	diffs, err := migrate.Verify(ctx, src, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range diffs {
		got = append(got, d.String())
	}
	sort.Strings(got)
	want := []string{
		`work spec "ws1": failed units: source 1, target 0`,
		`work spec "ws2": missing on the target`,
		`work spec "ws3": missing on the target`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Verify = %q, want %q", got, want)
	}
}

// TestFinishedUnitsDoNotChain: copying a finished unit whose output names
// units of its `then` spec must not add those units again on the target,
// where they may already be finished.
func TestFinishedUnitsDoNotChain(t *testing.T) {
	ctx := context.Background()
	src := testdaemon.Dial(t, testdaemon.Ours(t, "memory"))
	dst := testdaemon.Dial(t, testdaemon.Ours(t, "memory"))
	testdaemon.Populate(t, src)
	work, err := src.GetWork(ctx, "w", client.WorkRequest{WorkSpecNames: []string{"ws2"}, MaxJobs: 2})
	if err != nil || len(work) != 2 {
		t.Fatalf("GetWork(ws2) = %v, %v", work, err)
	}
	for _, w := range work {
		if err := src.UpdateWorkUnit(ctx, "ws2", w.Key, client.UnitUpdate{Status: client.Finished}); err != nil {
			t.Fatal(err)
		}
	}
	// The then-spec first, so that a chaining finish of ws1's unit would
	// find its children there and queue them again.
	if _, err := migrate.Copy(ctx, src, dst, migrate.Options{Specs: []string{"ws2", "ws1", "ws3"}}); err != nil {
		t.Fatal(err)
	}
	checkCopy(t, src, dst)
}

// TestNonASCIISpecName: a spec the Python daemon holds under a unicode
// name (what YAML and JSON give Python 2 for a non-ASCII name: a flow
// file, `coordinate load`) is found under that name on the source and on
// a Python target, both ways.
func TestNonASCIISpecName(t *testing.T) {
	ctx := context.Background()
	py := testdaemon.Dial(t, testdaemon.Python(t))
	name := "caf\u00e9"
	if err := py.SetWorkSpec(ctx, client.Map{"name": name, "min_gb": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := py.Call(ctx, "add_work_units", name, []any{[]any{[]byte("k1"), client.Map{"n": 1}}}); err != nil {
		t.Fatal(err)
	}
	ours := testdaemon.Dial(t, testdaemon.Ours(t, "memory"))
	if _, err := migrate.Copy(ctx, py, ours, migrate.Options{}); err != nil {
		t.Fatalf("from Python: %v", err)
	}
	same(t, py, ours)
	back := testdaemon.Dial(t, testdaemon.Python(t))
	if _, err := migrate.Copy(ctx, ours, back, migrate.Options{}); err != nil {
		t.Fatalf("back to Python: %v", err)
	}
	same(t, ours, back)
}

func same(t *testing.T, src, dst *client.Client) {
	t.Helper()
	want, got := snapshot(t, src), snapshot(t, dst)
	if len(want) != 1 || !reflect.DeepEqual(want, got) {
		t.Errorf("target differs from source:\nsource %v\ntarget %v", want, got)
	}
	diffs, err := migrate.Verify(context.Background(), src, dst, nil)
	if err != nil || len(diffs) != 0 {
		t.Errorf("Verify = %v, %v", diffs, err)
	}
}
