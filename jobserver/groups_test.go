package jobserver

import (
	"testing"
	"time"

	"github.com/coordinated/coordinated/pyvalue"
)

// testGroupsAndDependencies drives the dependency extension over the wire:
// depends_on and group in add_work_units metadata, the BLOCKED status with
// its depends_on list, release on finish, group_status and cancel_group.
func testGroupsAndDependencies(t *testing.T, newServer serverFactory) {
	js, clock := newServer(t, Config{})
	addSpec(t, js, "ws", nil)
	meta := func(deps ...string) m {
		list := make([]any, len(deps))
		for i, d := range deps {
			list[i] = []any{b("ws"), b(d)}
		}
		return m{"group": b("g"), "depends_on": list}
	}
	expect(t, "add", call(t, js, "add_work_units", b("ws"), []any{
		tuple{b("a"), m{}, m{"group": b("g")}},
		tuple{b("b"), m{}, meta("a")},
		tuple{b("c"), m{}, meta("a", "b")},
	}), `128([true, null])`)
	expect(t, "blocked status", call(t, js, "get_work_unit_status", b("ws"), []any{b("c")}),
		`128([[{'status': 2, 'depends_on': [128(['ws', 'a']), 128(['ws', 'b'])], 'expiration': null}], null])`)
	expect(t, "group counts", call(t, js, "group_status", b("g")),
		`128([{'counts': {1: 1, 2: 2}, 'stalled': false, 'complete': false, 'last_progress': `+pyvalue.Float(float64(start.Unix()))+`}, null])`)

	// Only a is runnable; finishing it releases b, then c.
	expect(t, "get a", call(t, js, "get_work", b("w"), m{"lease_time": 60}), `128([128(['ws', 'a', {}]), null])`)
	expect(t, "nothing else", call(t, js, "get_work", b("w"), m{"lease_time": 60}), `128([128([null, null, null]), null])`)
	clock.Add(time.Second)
	call(t, js, "update_work_unit", b("ws"), b("a"), m{"status": 4})
	expect(t, "get b", call(t, js, "get_work", b("w"), m{"lease_time": 60}), `128([128(['ws', 'b', {}]), null])`)

	// Cancelling fails what is left: b (pending) and c (blocked).
	expect(t, "cancel", call(t, js, "cancel_group", b("g")), `128([2, null])`)
	expect(t, "cancelled group", call(t, js, "group_status", b("g")),
		`128([{'counts': {4: 1, 5: 2}, 'stalled': false, 'complete': true, 'last_progress': `+pyvalue.Float(float64(start.Unix()+1))+`}, null])`)
	expect(t, "unknown group", call(t, js, "group_status", b("nobody")),
		`128([{'counts': {}, 'stalled': false, 'complete': true, 'last_progress': null}, null])`)
}
