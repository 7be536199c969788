package jobserver

import (
	"bytes"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

func testWorkSpecLifecycle(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	expect(t, "empty listing", call(t, js, "list_work_specs", m{}), `128([[], null])`)

	expect(t, "set", call(t, js, "set_work_spec", m{"name": b("ws1"), "module": "mod", "run_function": "fn", "x": "text"}),
		`128([true, null])`)
	// module/run_function come back as byte strings; other values as stored.
	expect(t, "get", call(t, js, "get_work_spec", b("ws1")),
		`{'x': "text", 'name': 'ws1', 'module': 'mod', 'run_function': 'fn'}`)
	expect(t, "get by text name", call(t, js, "get_work_spec", "ws1"),
		`{'x': "text", 'name': 'ws1', 'module': 'mod', 'run_function': 'fn'}`)
	expect(t, "get unknown", call(t, js, "get_work_spec", b("nope")), `null`)

	addSpec(t, js, "ws2", nil)
	expect(t, "set text name", call(t, js, "set_work_spec", map[string]any{"name": "ws3"}), `128([true, null])`)
	expect(t, "list all", call(t, js, "list_work_specs", m{}),
		`128([[{'x': "text", 'name': 'ws1', 'module': 'mod', 'run_function': 'fn'}, {'name': 'ws2', 'min_gb': 1}, {"name": "ws3"}], null])`)
	expect(t, "list page", call(t, js, "list_work_specs", m{"limit": 1, "start": b("ws2")}),
		`128([[{'name': 'ws2', 'min_gb': 1}], "ws3"])`)

	expect(t, "del unknown", call(t, js, "del_work_spec", b("nope")), `128([false, 'no such work_spec \'nope\''])`)
	expect(t, "del unknown text", call(t, js, "del_work_spec", "nöpe"), `128([false, 'no such work_spec u\'n\\xf6pe\''])`)
	expect(t, "del", call(t, js, "del_work_spec", b("ws3")), `128([true, null])`)
	expect(t, "clear", call(t, js, "clear"), `2`)
	expect(t, "empty again", call(t, js, "list_work_specs", m{}), `128([[], null])`)
}

func testSetWorkSpecErrors(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	if got := callErr(t, js, "set_work_spec", m{"min_gb": 1}); got != "KeyError('name',)\n" {
		t.Errorf("missing name: %q", got)
	}
	if got := callErr(t, js, "set_work_spec", m{"name": 5}); !strings.HasPrefix(got, "TypeError(") {
		t.Errorf("integer name: %q", got)
	}
	if got := callErr(t, js, "set_work_spec", []any{}); !strings.HasPrefix(got, "TypeError(") {
		t.Errorf("list: %q", got)
	}
	if got := callErr(t, js, "set_work_spec", m{"name": b("w"), "weight": "heavy"}); !strings.HasPrefix(got, "ValueError(") {
		t.Errorf("bad weight: %q", got)
	}
	// int() of a list or of None raised TypeError in Python.
	if got := callErr(t, js, "set_work_spec", m{"name": b("w"), "weight": []any{1}}); !strings.HasPrefix(got, "TypeError(") {
		t.Errorf("list weight: %q", got)
	}
	if got := callErr(t, js, "set_work_spec", m{"name": b("w"), "nice": nil}); !strings.HasPrefix(got, "TypeError(") {
		t.Errorf("null nice: %q", got)
	}
	expect(t, "nothing stored", call(t, js, "list_work_specs", m{}), `128([[], null])`)
}

func testControlWorkSpecAndMeta(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	addSpec(t, js, "ws1", nil)
	addSpec(t, js, "cont", m{"continuous": true})

	expect(t, "meta defaults", call(t, js, "get_work_spec_meta", b("ws1")),
		`128([{'status': 1, 'weight': 20, 'interval': null, 'continuous': false, 'max_running': null}, null])`)
	expect(t, "unknown", call(t, js, "control_work_spec", b("nope"), m{"status": 2}),
		`128([false, 'no such work spec nope'])`)
	expect(t, "meta unknown", call(t, js, "get_work_spec_meta", b("nope")),
		`128([null, 'no such work spec nope'])`)
	expect(t, "refused continuous", call(t, js, "control_work_spec", b("ws1"), m{"continuous": true, "status": 2}),
		`128([false, 'cannot make non-continuous work spec ws1 continuous'])`)
	expect(t, "nothing applied", call(t, js, "get_work_spec_meta", b("ws1")),
		`128([{'status': 1, 'weight': 20, 'interval': null, 'continuous': false, 'max_running': null}, null])`)

	expect(t, "control", call(t, js, "control_work_spec", b("ws1"), m{"status": 2, "interval": 2.5, "max_running": 3, "weight": 7}),
		`128([true, null])`)
	expect(t, "meta after", call(t, js, "get_work_spec_meta", b("ws1")),
		`128([{'status': 2, 'weight': 7, 'interval': 2.5, 'continuous': false, 'max_running': 3}, null])`)
	expect(t, "unlimited again", call(t, js, "control_work_spec", b("ws1"), m{"max_running": nil, "status": 1}),
		`128([true, null])`)
	expect(t, "meta unlimited", call(t, js, "get_work_spec_meta", b("ws1")),
		`128([{'status': 1, 'weight': 7, 'interval': 2.5, 'continuous': false, 'max_running': null}, null])`)

	expect(t, "continuous off", call(t, js, "control_work_spec", b("cont"), m{"continuous": false}), `128([true, null])`)
	expect(t, "continuous on", call(t, js, "control_work_spec", b("cont"), m{"continuous": 1}), `128([true, null])`)
	expect(t, "meta cont", call(t, js, "get_work_spec_meta", b("cont")),
		`128([{'status': 1, 'weight': 20, 'interval': null, 'continuous': true, 'max_running': null}, null])`)
}

func testArchiveAppliesRetention(t *testing.T, newServer serverFactory) {
	js, clock := newServer(t, Config{Retention: &coordinate.RetentionPolicy{MaxCount: 1}})
	addSpec(t, js, "ws", nil)
	call(t, js, "add_work_units", b("ws"), []any{tuple{b("a"), m{}}, tuple{b("b"), m{}}, tuple{b("c"), m{}}})
	for _, k := range []string{"a", "b", "c"} {
		clock.Add(time.Second)
		expect(t, "finish "+k, call(t, js, "update_work_unit", b("ws"), b(k), m{"status": 4}), `128([true, null])`)
	}
	// An empty list names no spec: nothing is archived (Python treats
	// only None as every spec).
	expect(t, "archive of no spec", call(t, js, "archive", m{"work_spec_names": []any{}}), `null`)
	expect(t, "nothing archived", call(t, js, "get_work_units", b("ws"), m{}),
		`128([[128(['a', {}]), 128(['b', {}]), 128(['c', {}])], null])`)
	expect(t, "archive without options", call(t, js, "archive"), `null`)
	expect(t, "counts keep archived units", call(t, js, "count_work_units", b("ws")), `128([{4: 3}, null])`)
	expect(t, "only the newest is listed", call(t, js, "get_work_units", b("ws"), m{}), `128([[128(['c', {}])], null])`)
	expect(t, "archive with names", call(t, js, "archive", m{"work_spec_names": []any{b("ws"), b("unknown")}}), `null`)
}

func testArchiveWithoutPolicyKeepsEverything(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	addSpec(t, js, "ws", nil)
	call(t, js, "add_work_units", b("ws"), []any{tuple{b("a"), m{}}})
	call(t, js, "update_work_unit", b("ws"), b("a"), m{"status": 4})
	expect(t, "archive", call(t, js, "archive", m{}), `null`)
	expect(t, "still listed", call(t, js, "get_work_units", b("ws"), m{}), `128([[128(['a', {}])], null])`)
}

// testSpecFidelity: where we match the Python daemon at the RPC
// layer (docs/compat.md, "Work-spec definitions").
func testSpecFidelity(t *testing.T, newServer serverFactory) {
	var logs bytes.Buffer
	js, _ := newServer(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})

	// Stored as Python stored it; the unusable keys warned about once each.
	def := m{"name": b("x"), "desc": 5, "then": 5, "priority": b("high"), "min_gb": []any{1}, "config": b("c.yaml")}
	expect(t, "set", call(t, js, "set_work_spec", def), `128([true, null])`)
	expect(t, "get", call(t, js, "get_work_spec", b("x")),
		`{'desc': 5, 'name': 'x', 'then': 5, 'config': 'c.yaml', 'min_gb': [1], 'priority': 'high'}`)
	warnings := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(warnings) != 3 {
		t.Fatalf("logged %d lines, want one warning per unusable key (then, priority, min_gb):\n%s", len(warnings), logs.String())
	}
	for _, key := range []string{"priority", "min_gb", "then"} {
		if !strings.Contains(logs.String(), "work_spec=x key="+key+" ") {
			t.Errorf("no warning naming spec x and key %s:\n%s", key, logs.String())
		}
	}

	// Meta echoes the stored types, also after control_work_spec.
	addSpec(t, js, "e", m{"interval": 10, "continuous": 1, "weight": int64(1e16), "max_running": 0})
	expect(t, "meta as stored", call(t, js, "get_work_spec_meta", b("e")),
		`128([{'status': 1, 'weight': 10000000000000000, 'interval': 10, 'continuous': 1, 'max_running': 0}, null])`)
	call(t, js, "control_work_spec", b("e"), m{"interval": 3, "max_running": b("2"), "weight": 2.7})
	expect(t, "meta after control", call(t, js, "get_work_spec_meta", b("e")),
		`128([{'status': 1, 'weight': 2, 'interval': 3, 'continuous': 1, 'max_running': 2}, null])`)
	call(t, js, "control_work_spec", b("e"), m{"interval": 1.5, "max_running": 0})
	expect(t, "meta after control 2", call(t, js, "get_work_spec_meta", b("e")),
		`128([{'status': 1, 'weight': 2, 'interval': 1.5, 'continuous': 1, 'max_running': 0}, null])`)
	// A value control_work_spec gave is shown as given, also where it
	// equals what the definition gives (Python stored it over the
	// definition's); storing the definition again shows the definition's.
	call(t, js, "control_work_spec", b("e"), m{"continuous": true, "weight": int64(1e16)})
	expect(t, "meta after control 3", call(t, js, "get_work_spec_meta", b("e")),
		`128([{'status': 1, 'weight': 2147483647, 'interval': 1.5, 'continuous': true, 'max_running': 0}, null])`)
	addSpec(t, js, "e", m{"interval": 10, "continuous": 1, "weight": int64(1e16), "max_running": 0})
	expect(t, "meta as stored again", call(t, js, "get_work_spec_meta", b("e")),
		`128([{'status': 1, 'weight': 10000000000000000, 'interval': 10, 'continuous': 1, 'max_running': 0}, null])`)
	addSpec(t, js, "f", m{"interval": b("2")})
	expect(t, "string interval as float()", call(t, js, "get_work_spec_meta", b("f")),
		`128([{'status': 1, 'weight': 20, 'interval': 2.0, 'continuous': false, 'max_running': null}, null])`)

	// max_running 0 runs none; max_getwork 0 hands out one per call.
	call(t, js, "add_work_units", b("e"), []any{tuple{b("k"), m{}}})
	expect(t, "max_running 0", call(t, js, "get_work", b("w"), m{"work_spec_names": []any{b("e")}}), `128([128([null, null, null]), null])`)
	addSpec(t, js, "g", m{"max_getwork": 0})
	call(t, js, "add_work_units", b("g"), []any{tuple{b("a"), m{}}, tuple{b("b"), m{}}})
	expect(t, "max_getwork 0, max_jobs given as a string", call(t, js, "get_work", b("w"),
		m{"work_spec_names": b("g"), "max_jobs": b("5"), "lease_time": b("100")}),
		`128([[128(['g', 'a', {}])], null])`)
	if got := callErr(t, js, "get_work", b("w"), m{"max_jobs": b("many")}); !strings.HasPrefix(got, "ValueError(") {
		t.Errorf("max_jobs 'many': %q, want a ValueError", got)
	}
	if got := callErr(t, js, "get_work", b("w"), m{"max_jobs": []any{1}}); !strings.HasPrefix(got, "TypeError(") {
		t.Errorf("max_jobs [1]: %q, want a TypeError", got)
	}

	// A continuous spec's synthetic key is a byte string.
	addSpec(t, js, "c", m{"continuous": true})
	got := call(t, js, "get_work", b("w"), m{"work_spec_names": []any{b("c")}})
	if !regexp.MustCompile(`^128\(\[128\(\['c', '[0-9]+\.[0-9]{3}', \{\}\]\), null\]\)$`).MatchString(got) {
		t.Errorf("continuous get_work = %s, want a byte-string key", got)
	}
}
