package jobserver

import (
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/pyvalue"
)

func testGetWorkShapes(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	expect(t, "none, max_jobs 1", call(t, js, "get_work", b("w"), m{"lease_time": 900, "max_jobs": 1}),
		`128([128([null, null, null]), null])`)
	expect(t, "none, default max_jobs", call(t, js, "get_work", b("w"), m{}), `128([128([null, null, null]), null])`)
	expect(t, "none, max_jobs 10", call(t, js, "get_work", b("w"), m{"lease_time": 900, "max_jobs": 10}), `128([[], null])`)
	expect(t, "none, max_jobs 0", call(t, js, "get_work", b("w"), m{"max_jobs": 0}), `128([[], null])`)

	expect(t, "text spec", call(t, js, "set_work_spec", map[string]any{"name": "ws"}), `128([true, null])`)
	call(t, js, "add_work_units", b("ws"), []any{
		tuple{b("a"), m{"x": 1}}, tuple{"b", map[string]any{"y": tuple{}}}, tuple{b("c"), nil},
	})
	expect(t, "one", call(t, js, "get_work", b("w"), m{"max_jobs": 1, "available_gb": 7.5}),
		`128([128(["ws", 'a', {'x': 1}]), null])`)
	expect(t, "list", call(t, js, "get_work", "w", m{"max_jobs": 5, "work_spec_names": tuple{b("ws"), b("other")}}),
		`128([[128(["ws", "b", {"y": 128([])}]), 128(["ws", 'c', null])], null])`)
	expect(t, "filtered out", call(t, js, "get_work", b("w"), m{"work_spec_names": []any{b("other")}}),
		`128([128([null, null, null]), null])`)
}

func testGetWorkLeaseTime(t *testing.T, newServer serverFactory) {
	js, clock := newServer(t, Config{})
	addSpec(t, js, "ws", nil)
	call(t, js, "add_work_units", b("ws"), []any{tuple{b("a"), m{}}, tuple{b("b"), m{}}})
	now := float64(start.Unix())
	call(t, js, "get_work", b("w"), m{"lease_time": 2})
	call(t, js, "get_work", b("w"), m{"lease_time": 0.5}) // below 1 s: 300 s
	expect(t, "leases", call(t, js, "get_work_unit_status", b("ws"), []any{b("a"), b("b")}),
		`128([[{'status': 3, 'worker_id': 'w', 'expiration': `+pyvalue.Float(now+2)+`}, {'status': 3, 'worker_id': 'w', 'expiration': `+pyvalue.Float(now+300)+`}], null])`)
	clock.Add(3 * time.Second)
	expect(t, "short lease expired", call(t, js, "count_work_units", b("ws")), `128([{1: 1, 3: 1}, null])`)
	expect(t, "re-leased", call(t, js, "get_work", b("w2"), m{}), `128([128(['ws', 'a', {}]), null])`)
}

func testChildWorkUnits(t *testing.T, newServer serverFactory) {
	js, clock := newServer(t, Config{})
	addSpec(t, js, "ws", nil)
	call(t, js, "add_work_units", b("ws"), []any{tuple{b("a"), m{"n": 1}}})
	expect(t, "parent", call(t, js, "worker_heartbeat", b("p"), b("RUN"), 6000, m{"pid": 1}, nil), `128([true, null])`)
	expect(t, "child", call(t, js, "worker_heartbeat", b("c"), b("RUN"), 6000, m{"pid": 2}, b("p")), `128([true, null])`)
	expect(t, "unknown parent", call(t, js, "get_child_work_units", b("nobody")), `128([{}, null])`)
	// An empty parent is no parent, as in Python (`if parent:`).
	expect(t, "empty parent", call(t, js, "worker_heartbeat", b("e"), b("RUN"), 6000, m{}, b("")), `128([true, null])`)
	expect(t, "children of ''", call(t, js, "get_child_work_units", b("")), `128([{}, null])`)
	expect(t, "idle child", call(t, js, "get_child_work_units", b("p")), `128([{'c': []}, null])`)

	call(t, js, "get_work", b("c"), m{"lease_time": 10})
	now := float64(start.Unix())
	expect(t, "leased", call(t, js, "get_child_work_units", b("p")),
		`128([{'c': [{'expires': `+pyvalue.Float(now+10)+`, 'worker_id': 'c', 'work_unit_key': 'a', 'work_spec_name': 'ws', 'work_unit_data': {'n': 1}}]}, null])`)
	clock.Add(11 * time.Second)
	// The lapsed lease stays listed, held by nobody: reported with the
	// child's id and the lapsed lease's expiry as Python did before its
	// sweep, so the fork worker fails the unit when it stops the stuck
	// child (SEMANTICS §11.3, compat.md).
	expect(t, "lapsed", call(t, js, "get_child_work_units", b("p")),
		`128([{'c': [{'expires': `+pyvalue.Float(now+10)+`, 'worker_id': 'c', 'work_unit_key': 'a', 'work_spec_name': 'ws', 'work_unit_data': {'n': 1}}]}, null])`)
	// Leased again by the child, then given back as the Python worker
	// does, with a lease time in the past: the child's id and that past
	// time, as Python showed them until its sweep.
	call(t, js, "get_work", b("c"), m{"lease_time": 10})
	call(t, js, "update_work_unit", b("ws"), b("a"), m{"lease_time": -1})
	expect(t, "given back with a lease time", call(t, js, "get_child_work_units", b("p")),
		`128([{'c': [{'expires': `+pyvalue.Float(now+10)+`, 'worker_id': 'c', 'work_unit_key': 'a', 'work_spec_name': 'ws', 'work_unit_data': {'n': 1}}]}, null])`)
	// Leased again, then given back with status AVAILABLE (an operator's
	// retry, say): the new lease cleared the old time, and Python showed
	// such a unit with no worker, so the fork worker leaves it alone.
	call(t, js, "get_work", b("c"), m{"lease_time": 10})
	call(t, js, "update_work_unit", b("ws"), b("a"), m{"status": 1, "lease_time": 0})
	expect(t, "given back with a status", call(t, js, "get_child_work_units", b("p")),
		`128([{'c': [{'expires': null, 'worker_id': null, 'work_unit_key': 'a', 'work_spec_name': 'ws', 'work_unit_data': {'n': 1}}]}, null])`)
	call(t, js, "update_work_unit", b("ws"), b("a"), m{"status": 4})
	expect(t, "finished", call(t, js, "get_child_work_units", b("p")), `128([{'c': []}, null])`)
}

// testGetWorkNullOptions: Python's get_work read options.get('max_jobs', 1)
// and options.get('lease_time', 300) through int() and float(), and None
// options through .get: every null here raised, and nothing was leased.
func testGetWorkNullOptions(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	addSpec(t, js, "ws", nil)
	call(t, js, "add_work_units", b("ws"), []any{tuple{b("a"), m{}}})
	for what, opts := range map[string]any{
		"null options":    nil,
		"null max_jobs":   m{"max_jobs": nil},
		"null lease_time": m{"lease_time": nil},
	} {
		if got := callErr(t, js, "get_work", b("w"), opts); !strings.HasPrefix(got, "TypeError(") {
			t.Errorf("%s: %q", what, got)
		}
	}
	expect(t, "nothing leased", call(t, js, "count_work_units", b("ws")), `128([{1: 1}, null])`)
	expect(t, "null work_spec_names is all specs", call(t, js, "get_work", b("w"), m{"work_spec_names": nil, "lease_time": 60}),
		`128([128(['ws', 'a', {}]), null])`)
}
