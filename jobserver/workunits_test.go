package jobserver

import (
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/pyvalue"
)

func testAddWorkUnitsValidation(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	addSpec(t, js, "ws", nil)
	expect(t, "unknown spec", call(t, js, "add_work_units", b("nope"), []any{}), `128([false, 'no such work_spec \'nope\''])`)
	expect(t, "empty list", call(t, js, "add_work_units", b("ws"), []any{}), `128([true, null])`)
	for what, items := range map[string]any{
		"item not a list": []any{b("k")},
		"one element":     []any{[]any{b("k")}},
		"integer key":     []any{[]any{b("ok"), m{}}, []any{5, m{}}},
		"five elements":   []any{[]any{b("k"), m{}, nil, 1, 2}},
	} {
		if got := callErr(t, js, "add_work_units", b("ws"), items); !strings.HasPrefix(got, "AssertionError(") {
			t.Errorf("%s: %q", what, got)
		}
	}
	if got := callErr(t, js, "add_work_units", b("ws"), []any{[]any{b("k"), m{}, m{"priority": "high"}}}); !strings.HasPrefix(got, "ValueError(") {
		t.Errorf("bad meta priority: %q", got)
	}
	expect(t, "nothing was added", call(t, js, "count_work_units", b("ws")), `128([{}, null])`)
}

func testAddAndListWorkUnits(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	addSpec(t, js, "ws", nil)
	expect(t, "add", call(t, js, "add_work_units", b("ws"), tuple{
		tuple{b("a"), m{"x": tuple{1, 2}}},
		[]any{"kü", map[string]any{"n": 1}, nil},
		[]any{b("hi"), m{}, m{"priority": 5}},
		[]any{b("top"), m{}, m{"priority": 5}, 10},
		tuple{b("\x00\xff"), nil},
	}), `128([true, null])`)

	expect(t, "all by key", call(t, js, "get_work_units", b("ws"), m{}),
		`128([[128([h'00ff', null]), 128(['a', {'x': 128([1, 2])}]), 128(['hi', {}]), 128(["k\u00fc", {"n": 1}]), 128(['top', {}])], null])`)
	expect(t, "by state, priority first", call(t, js, "get_work_units", b("ws"), m{"state": tuple{1, 3}, "limit": 3}),
		`128([[128(['top', {}]), 128(['hi', {}]), 128([h'00ff', null])], null])`)
	expect(t, "start is inclusive", call(t, js, "get_work_units", b("ws"), m{"start": b("hi"), "limit": 2}),
		`128([[128(['hi', {}]), 128(["k\u00fc", {"n": 1}])], null])`)
	expect(t, "keys in request order", call(t, js, "get_work_units", b("ws"), m{"work_unit_keys": []any{b("top"), b("missing"), "a"}, "state": 5}),
		`128([[128(['top', {}]), 128(['missing', null]), 128(['a', {'x': 128([1, 2])}])], null])`)
	expect(t, "no finished units", call(t, js, "get_work_units", b("ws"), m{"state": 4}), `128([[], null])`)
	expect(t, "blocked is accepted", call(t, js, "get_work_units", b("ws"), m{"state": 2}), `128([[], null])`)
	expect(t, "unknown spec", call(t, js, "get_work_units", b("nope"), m{}), `128([null, 'no such work_spec \'nope\''])`)
	expect(t, "limit 0", call(t, js, "get_work_units", b("ws"), m{"limit": 0}), `128([[], null])`)
	expect(t, "empty state list", call(t, js, "get_work_units", b("ws"), m{"state": []any{}}), `128([[], null])`)
	expect(t, "limit 0, unknown spec", call(t, js, "get_work_units", b("nope"), m{"limit": 0}), `128([null, 'no such work_spec \'nope\''])`)
	expect(t, "counts", call(t, js, "count_work_units", b("ws")), `128([{1: 5}, null])`)
	expect(t, "count unknown", call(t, js, "count_work_units", "nope"), `128([false, 'no such work_spec u\'nope\''])`)
}

func testPrioritizeWorkUnits(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	addSpec(t, js, "ws", nil)
	call(t, js, "add_work_units", b("ws"), []any{tuple{b("a"), m{}}, tuple{b("b"), m{}}, tuple{b("c"), m{}}})
	expect(t, "missing keys", call(t, js, "prioritize_work_units", b("ws"), m{"priority": 1}), `128([false, 'missing work_unit_keys'])`)
	expect(t, "unknown spec", call(t, js, "prioritize_work_units", b("nope"), m{"work_unit_keys": []any{b("a")}}),
		`128([false, 'no such work_spec \'nope\''])`)
	expect(t, "set", call(t, js, "prioritize_work_units", b("ws"), m{"work_unit_keys": []any{b("c"), b("zz")}, "priority": 1, "adjustment": nil}),
		`128([true, null])`)
	expect(t, "adjust", call(t, js, "prioritize_work_units", b("ws"), m{"work_unit_keys": []any{b("b")}, "priority": nil, "adjustment": 0.5}),
		`128([true, null])`)
	expect(t, "order", call(t, js, "get_work_units", b("ws"), m{"state": 1}),
		`128([[128(['c', {}]), 128(['b', {}]), 128(['a', {}])], null])`)
}

func testDelWorkUnits(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	addSpec(t, js, "ws", nil)
	call(t, js, "add_work_units", b("ws"), []any{tuple{b("a"), m{}}, tuple{b("b"), m{}}, tuple{b("c"), m{}}, tuple{b("d"), m{}}})
	call(t, js, "update_work_unit", b("ws"), b("a"), m{"status": 5})
	call(t, js, "update_work_unit", b("ws"), b("b"), m{"status": 5})

	expect(t, "no options deletes nothing", call(t, js, "del_work_units", b("ws"), m{}),
		`128([0, 'no usable options to del_work_units'])`)
	expect(t, "all false deletes nothing", call(t, js, "del_work_units", b("ws"), m{"all": false}),
		`128([0, 'no usable options to del_work_units'])`)
	expect(t, "unknown spec", call(t, js, "del_work_units", b("nope"), m{"all": true}),
		`128([0, 'no such work_spec \'nope\''])`)
	expect(t, "keys restricted to state", call(t, js, "del_work_units", b("ws"), m{"work_unit_keys": []any{b("a"), b("c")}, "state": 5}),
		`128([1, null])`)
	// Python compared each unit's status with the state option: a list
	// (which get_work_units takes) equals no status, so nothing goes.
	expect(t, "state list deletes nothing", call(t, js, "del_work_units", b("ws"), m{"state": []any{1, 5}}), `128([0, null])`)
	expect(t, "state tuple deletes nothing", call(t, js, "del_work_units", b("ws"), m{"state": tuple{1}}), `128([0, null])`)
	expect(t, "empty state list", call(t, js, "del_work_units", b("ws"), m{"state": []any{}}), `128([0, null])`)
	expect(t, "keys with a state list", call(t, js, "del_work_units", b("ws"), m{"work_unit_keys": []any{b("b"), b("c")}, "state": []any{1, 5}}), `128([0, null])`)
	expect(t, "state list, unknown spec", call(t, js, "del_work_units", b("nope"), m{"state": []any{1}}),
		`128([0, 'no such work_spec \'nope\''])`)
	expect(t, "nothing deleted", call(t, js, "count_work_units", b("ws")), `128([{1: 2, 5: 1}, null])`)
	expect(t, "by state", call(t, js, "del_work_units", b("ws"), m{"state": 5}), `128([1, null])`)
	expect(t, "left", call(t, js, "get_work_units", b("ws"), m{}), `128([[128(['c', {}]), 128(['d', {}])], null])`)
	expect(t, "all", call(t, js, "del_work_units", b("ws"), m{"all": true}), `128([2, null])`)
	expect(t, "none left", call(t, js, "count_work_units", b("ws")), `128([{}, null])`)
}

func testUpdateWorkUnitAndStatus(t *testing.T, newServer serverFactory) {
	js, clock := newServer(t, Config{})
	addSpec(t, js, "ws", nil)
	call(t, js, "add_work_units", b("ws"), []any{tuple{b("a"), m{}}, tuple{"kü", m{}}})

	expect(t, "nothing to do", call(t, js, "update_work_unit", b("nope"), b("a"), m{"data": m{}}),
		`128([false, 'nothing to do'])`)
	expect(t, "unknown spec", call(t, js, "update_work_unit", b("nope"), b("a"), m{"status": 4}),
		`128([false, 'no such work_spec \'nope\''])`)
	expect(t, "unknown unit", call(t, js, "update_work_unit", b("ws"), "zü", m{"status": 4}),
		`128([false, 'no such work unit key=u\'z\\xfc\''])`)
	if got := callErr(t, js, "update_work_unit", b("ws"), b("a"), m{"status": 7}); got != "ValueError('status must be 1, 3, 4 or 5, not 7',)\n" {
		t.Errorf("bad status: %q", got)
	}
	if got := callErr(t, js, "update_work_unit", b("nope"), b("a"), m{"status": 2, "worker_id": 5}); got != "ValueError('status must be 1, 3, 4 or 5, not 2',)\n" {
		t.Errorf("bad status in an unknown spec: %q", got)
	}

	// Lease a unit and look at its status.
	expect(t, "get_work", call(t, js, "get_work", b("w1"), m{"lease_time": 900, "max_jobs": 1}),
		`128([128(['ws', 'a', {}]), null])`)
	now := float64(start.Unix())
	expect(t, "status", call(t, js, "get_work_unit_status", b("ws"), []any{b("a"), "kü", b("zz")}),
		`128([[{'status': 3, 'worker_id': 'w1', 'expiration': `+pyvalue.Float(now+900)+`}, {'status': 1, 'expiration': null}, null], null])`)
	expect(t, "status unknown spec", call(t, js, "get_work_unit_status", b("nope"), []any{b("a")}),
		`128([null, 'no such work_spec \'nope\''])`)

	// Renewal clamps a huge lease to 300 s.
	expect(t, "renew", call(t, js, "update_work_unit", b("ws"), b("a"), m{"lease_time": 100000}), `128([true, null])`)
	expect(t, "renewed", call(t, js, "get_work_unit_status", b("ws"), []any{b("a")}),
		`128([[{'status': 3, 'worker_id': 'w1', 'expiration': `+pyvalue.Float(now+300)+`}], null])`)

	// Fail with a traceback, then finish wins, then fail is ignored.
	clock.Add(10 * time.Second)
	expect(t, "fail", call(t, js, "update_work_unit", b("ws"), b("a"), m{"status": 5, "data": m{"traceback": "boom"}}),
		`128([true, null])`)
	expect(t, "failed", call(t, js, "get_work_unit_status", b("ws"), []any{b("a")}),
		`128([[{'status': 5, 'traceback': "boom", 'worker_id': 'w1', 'expiration': `+pyvalue.Float(now+10)+`}], null])`)
	expect(t, "finish", call(t, js, "update_work_unit", b("ws"), b("a"), m{"status": 4, "data": m{"done": true}}), `128([true, null])`)
	expect(t, "fail after finish", call(t, js, "update_work_unit", b("ws"), b("a"), m{"status": 5, "data": m{"late": true}}),
		`128([true, null])`)
	expect(t, "stays finished", call(t, js, "get_work_units", b("ws"), m{"state": 4}), `128([[128(['a', {'late': true}])], null])`)

	// Retry makes it available again.
	expect(t, "retry", call(t, js, "update_work_unit", b("ws"), b("a"), m{"status": 1, "lease_time": 0}), `128([true, null])`)
	expect(t, "counts", call(t, js, "count_work_units", b("ws")), `128([{1: 2}, null])`)
}

// testUpdateWorkUnitNullDataAndStatusZero: Python's update_work_unit read
// its options with options.get, so `data: None` kept the unit's data (the
// unit still chains from it) and only a missing or null status was "no
// status"; status 0 is an unknown code like 7.
func testUpdateWorkUnitNullDataAndStatusZero(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	addSpec(t, js, "ws", m{"then": b("next")})
	addSpec(t, js, "next", nil)
	call(t, js, "add_work_units", b("ws"), []any{tuple{b("a"), m{"output": []any{b("o1")}, "x": 1}}, tuple{b("b"), m{"y": 2}}})
	call(t, js, "get_work", b("w1"), m{"lease_time": 900, "max_jobs": 2})

	expect(t, "renew with null data", call(t, js, "update_work_unit", b("ws"), b("b"), m{"lease_time": 600, "data": nil}), `128([true, null])`)
	expect(t, "finish with null data", call(t, js, "update_work_unit", b("ws"), b("a"), m{"status": 4, "data": nil}), `128([true, null])`)
	expect(t, "data kept", call(t, js, "get_work_units", b("ws"), m{}),
		`128([[128(['a', {'x': 1, 'output': ['o1']}]), 128(['b', {'y': 2}])], null])`)
	expect(t, "chained from the kept data", call(t, js, "get_work_units", b("next"), m{}), `128([[128(['o1', {}])], null])`)

	if got := callErr(t, js, "update_work_unit", b("ws"), b("b"), m{"status": 0, "lease_time": 60}); !strings.HasPrefix(got, "ValueError(") {
		t.Errorf("status 0: %q", got)
	}
	if got := callErr(t, js, "update_work_unit", b("ws"), b("b"), m{"status": false}); !strings.HasPrefix(got, "ValueError(") {
		t.Errorf("status false: %q", got)
	}
	expect(t, "still pending", call(t, js, "count_work_units", b("ws")), `128([{3: 1, 4: 1}, null])`)
}
