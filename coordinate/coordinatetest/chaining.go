package coordinatetest

import (
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// chainingTests cover `then` + `output` (SEMANTICS §10).
var chainingTests = []test{
	{"MapForm", testChainMapForm},
	{"ListOfNames", testChainListOfNames},
	{"ListOfLists", testChainListOfLists},
	{"Tuples", testChainTuples},
	{"PriorityInherited", testChainPriorityInherited},
	{"MissingSuccessor", testChainMissingSuccessor},
	{"MalformedSkipped", testChainMalformedSkipped},
	{"NoOutput", testChainNoOutput},
	{"ReAddsExisting", testChainReAddsExisting},
	{"OnlyOnFinish", testChainOnlyOnFinish},
	{"ReSetChangesSuccessor", testChainReSetChangesSuccessor},
}

// chainSpecs makes spec "a" chaining to "b" and a unit "k" in a with the
// given priority, finishes it with data, and returns b's units by key.
func chainSpecs(e *env, priority float64, data any) map[string]*coordinate.WorkUnit {
	e.t.Helper()
	e.spec(m{"name": "a", "then": "b"})
	e.spec(m{"name": "b"})
	e.add("a", coordinate.WorkUnitInput{Key: text("k"), Data: enc(e.t, m{}), Priority: ptr(priority)})
	e.workOne("w")
	e.update("a", "k", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished, Data: enc(e.t, data)})
	us, err := e.ns.ListWorkUnits(e.ctx, "b", coordinate.WorkUnitQuery{})
	if err != nil {
		e.t.Fatalf("ListWorkUnits(b): %v", err)
	}
	out := map[string]*coordinate.WorkUnit{}
	for _, u := range us {
		out[u.Key.Bytes] = u
	}
	return out
}

// checkChained fails unless units has exactly the keys of want, each with
// the data given.
func checkChained(e *env, units map[string]*coordinate.WorkUnit, want map[string]any) {
	e.t.Helper()
	e.checkKeys("chained units", sortedKeys(units), sortedKeys(want))
	for k, d := range want {
		if u := units[k]; u != nil {
			checkData(e.t, "chained unit "+k, u.Data, d)
			if u.Status != coordinate.StatusAvailable {
				e.t.Errorf("chained unit %q status = %v, want available", k, u.Status)
			}
		}
	}
}

func testChainMapForm(e *env) {
	units := chainSpecs(e, 0, m{"output": map[any]any{
		"page-7":                 m{"url": "u7"},
		"page-8":                 m{},
		cbor.ByteString("bin-9"): []any{1, 2},
	}})
	checkChained(e, units, map[string]any{"page-7": m{"url": "u7"}, "page-8": m{}, "bin-9": []any{1, 2}})
	if u := units["bin-9"]; u != nil && u.Key != bin("bin-9") {
		e.t.Errorf("byte-string output key echoed as %+v", u.Key)
	}
	if u := units["page-7"]; u != nil && u.Key != text("page-7") {
		e.t.Errorf("text output key echoed as %+v", u.Key)
	}
}

func testChainListOfNames(e *env) {
	units := chainSpecs(e, 0, m{"output": []any{"p1", []byte("p2"), "p1"}})
	checkChained(e, units, map[string]any{"p1": m{}, "p2": m{}})
}

func testChainListOfLists(e *env) {
	units := chainSpecs(e, 3, m{"output": []any{
		[]any{"hot", m{"n": 1}, m{"priority": 50}},
		[]any{"warm", m{}, nil, 5},
		[]any{"later", m{}, m{"delay": 600}},
		[]any{"override", m{}, m{"priority": 1}, 7.5},
		[]any{"pair", m{"p": true}},
		"plain",
	}})
	checkChained(e, units, map[string]any{
		"hot": m{"n": 1}, "warm": m{}, "later": m{}, "override": m{}, "pair": m{"p": true}, "plain": m{},
	})
	wantPrio := map[string]float64{"hot": 50, "warm": 5, "later": 3, "override": 7.5, "pair": 3, "plain": 3}
	for k, p := range wantPrio {
		if u := units[k]; u != nil && u.Priority != p {
			e.t.Errorf("chained unit %q priority = %v, want %v", k, u.Priority, p)
		}
	}
	if u := units["later"]; u != nil {
		e.checkTime("delayed chained unit not-before", u.NotBefore, e.now().Add(600*time.Second))
	}
	// The delayed unit is not handed out yet; the others are.
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10, WorkSpecs: []string{"b"}})
	e.checkKeys("handed out", attemptKeys(as), []string{"hot", "override", "pair", "plain", "warm"})
}

func testChainTuples(e *env) {
	units := chainSpecs(e, 0, m{"output": tuple(
		tuple("t1", m{"x": 1}),
		tuple("t2", m{}, m{"priority": 2}, 4),
		"t3",
	)})
	checkChained(e, units, map[string]any{"t1": m{"x": 1}, "t2": m{}, "t3": m{}})
	if u := units["t2"]; u != nil && u.Priority != 4 {
		e.t.Errorf("tuple 4th element priority: got %v, want 4", u.Priority)
	}
}

func testChainPriorityInherited(e *env) {
	units := chainSpecs(e, 12.5, m{"output": m{"c": m{}}})
	if u := units["c"]; u == nil || u.Priority != 12.5 {
		e.t.Errorf("chained unit = %+v, want priority 12.5 inherited from the finished unit", u)
	}
}

func testChainMissingSuccessor(e *env) {
	e.spec(m{"name": "a", "then": "nowhere"})
	e.addKeys("a", "k")
	e.finish("a", "k", m{"output": []any{"x"}})
	e.checkStatus("a", coordinate.StatusFinished, "k")
	_, err := e.ns.WorkSpec(e.ctx, "nowhere")
	e.wantErr("missing successor", err, coordinate.ErrNoSuchWorkSpec)
}

func testChainMalformedSkipped(e *env) {
	units := chainSpecs(e, 0, m{"output": []any{
		5,
		[]any{},
		[]any{7, m{}},
		[]any{"ok", m{"o": 1}},
		nil,
		m{"not": "a name"},
		"fine",
	}})
	checkChained(e, units, map[string]any{"ok": m{"o": 1}, "fine": m{}})
	e.checkStatus("a", coordinate.StatusFinished, "k")
}

func testChainNoOutput(e *env) {
	for i, data := range []any{m{}, m{"output": m{}}, m{"output": []any{}}, m{"output": nil}, "not a map", []any{"x"}} {
		e.t.Run(string(rune('a'+i)), func(t *testing.T) {
			se := sub(e, t)
			units := chainSpecs(se, 0, data)
			if len(units) != 0 {
				t.Errorf("finishing with data %#v chained %q", data, sortedKeys(units))
			}
		})
	}
}

func testChainReAddsExisting(e *env) {
	e.spec(m{"name": "a", "then": "b"})
	e.spec(m{"name": "b"})
	e.add("b", e.unit("x", m{"v": "old"}))
	e.finish("b", "x", nil)
	e.addKeys("a", "k")
	e.finish("a", "k", m{"output": m{"x": m{"v": "new"}}})
	u := e.mustGet("b", "x")
	if u.Status != coordinate.StatusAvailable {
		e.t.Errorf("re-chained finished unit status = %v, want available", u.Status)
	}
	checkData(e.t, "re-chained unit", u.Data, m{"v": "new"})
}

func testChainOnlyOnFinish(e *env) {
	e.spec(m{"name": "a", "then": "b"})
	e.spec(m{"name": "b"})
	e.addKeys("a", "f", "r")
	e.update("a", "f", coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed, Data: enc(e.t, m{"output": []any{"x"}})})
	e.update("a", "r", coordinate.WorkUnitUpdate{Status: coordinate.StatusPending, Data: enc(e.t, m{"output": []any{"y"}})})
	e.update("a", "r", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	e.checkCounts("b", nil)
}

func testChainReSetChangesSuccessor(e *env) {
	e.spec(m{"name": "a", "then": "b"})
	e.spec(m{"name": "b"})
	e.spec(m{"name": "c"})
	e.addKeys("a", "k1", "k2")
	e.finish("a", "k1", m{"output": []any{"x1"}})
	e.spec(m{"name": "a", "then": "c"})
	e.finish("a", "k2", m{"output": []any{"x2"}})
	e.checkKeys("b", e.list("b", coordinate.WorkUnitQuery{}), []string{"x1"})
	e.checkKeys("c after re-setting a's then", e.list("c", coordinate.WorkUnitQuery{}), []string{"x2"})
}
