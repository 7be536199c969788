package coordinate

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

func TestParseWorkSpecDefaults(t *testing.T) {
	name, meta, err := ParseWorkSpec(enc(t, map[string]any{"name": "ws"}))
	if err != nil {
		t.Fatal(err)
	}
	if name != (Name{Bytes: "ws", Text: true}) {
		t.Errorf("name = %#v", name)
	}
	want := WorkSpecMeta{Weight: 20, ThenPreempts: true}
	if meta != want {
		t.Errorf("meta = %+v, want %+v", meta, want)
	}
}

func TestParseWorkSpecKeys(t *testing.T) {
	tests := []struct {
		name string
		def  map[any]any
		want func(m *WorkSpecMeta) bool
	}{
		{"byte-string name", map[any]any{cbor.ByteString("name"): []byte("b")}, func(m *WorkSpecMeta) bool { return m.Weight == 20 }},
		{"weight", map[any]any{"name": "x", "weight": 7}, func(m *WorkSpecMeta) bool { return m.Weight == 7 }},
		{"weight numeric string", map[any]any{"name": "x", "weight": "7"}, func(m *WorkSpecMeta) bool { return m.Weight == 7 }},
		{"weight float truncated", map[any]any{"name": "x", "weight": 7.9}, func(m *WorkSpecMeta) bool { return m.Weight == 7 }},
		{"weight zero kept", map[any]any{"name": "x", "weight": 0}, func(m *WorkSpecMeta) bool { return m.Weight == 0 }},
		{"weight negative kept", map[any]any{"name": "x", "weight": -3}, func(m *WorkSpecMeta) bool { return m.Weight == -3 }},
		{"nice", map[any]any{"name": "x", "nice": 5}, func(m *WorkSpecMeta) bool { return m.Weight == 15 }},
		{"nice floor 1", map[any]any{"name": "x", "nice": 40}, func(m *WorkSpecMeta) bool { return m.Weight == 1 }},
		{"weight beats nice", map[any]any{"name": "x", "nice": 5, "weight": 3}, func(m *WorkSpecMeta) bool { return m.Weight == 3 }},
		{"byte keys", map[any]any{cbor.ByteString("name"): "x", cbor.ByteString("weight"): 4}, func(m *WorkSpecMeta) bool { return m.Weight == 4 }},
		{"priority", map[any]any{"name": "x", "priority": 9}, func(m *WorkSpecMeta) bool { return m.Priority == 9 }},
		{"disabled", map[any]any{"name": "x", "disabled": true}, func(m *WorkSpecMeta) bool { return m.Paused }},
		{"disabled false", map[any]any{"name": "x", "disabled": false}, func(m *WorkSpecMeta) bool { return !m.Paused }},
		{"disabled truthy int", map[any]any{"name": "x", "disabled": 1}, func(m *WorkSpecMeta) bool { return m.Paused }},
		{"continuous", map[any]any{"name": "x", "continuous": true}, func(m *WorkSpecMeta) bool { return m.Continuous && m.CanBeContinuous }},
		{"interval int", map[any]any{"name": "x", "interval": 60}, func(m *WorkSpecMeta) bool { return m.Interval == time.Minute }},
		{"interval fractional", map[any]any{"name": "x", "interval": 1.5}, func(m *WorkSpecMeta) bool { return m.Interval == 1500*time.Millisecond }},
		{"interval string", map[any]any{"name": "x", "interval": "2.5"}, func(m *WorkSpecMeta) bool { return m.Interval == 2500*time.Millisecond }},
		{"interval null", map[any]any{"name": "x", "interval": nil}, func(m *WorkSpecMeta) bool { return m.Interval == 0 }},
		{"max_running", map[any]any{"name": "x", "max_running": 2}, func(m *WorkSpecMeta) bool { return m.MaxRunning == 2 }},
		{"max_running null", map[any]any{"name": "x", "max_running": nil}, func(m *WorkSpecMeta) bool { return m.MaxRunning == 0 }},
		{"max_running zero runs none", map[any]any{"name": "x", "max_running": 0}, func(m *WorkSpecMeta) bool { v, ok := m.MaxRunningValue(); return ok && v == 0 && m.MaxRunning < 0 }},
		{"max_running negative runs none", map[any]any{"name": "x", "max_running": -1}, func(m *WorkSpecMeta) bool { v, ok := m.MaxRunningValue(); return ok && v == -1 }},
		{"max_running numeric string", map[any]any{"name": "x", "max_running": " 3 "}, func(m *WorkSpecMeta) bool { return m.MaxRunning == 3 }},
		{"max_getwork zero is one", map[any]any{"name": "x", "max_getwork": 0}, func(m *WorkSpecMeta) bool { return m.MaxGetwork == 1 }},
		{"max_getwork float", map[any]any{"name": "x", "max_getwork": 2.9}, func(m *WorkSpecMeta) bool { return m.MaxGetwork == 2 }},
		{"weight 10**16 saturates", map[any]any{"name": "x", "weight": int64(1e16)}, func(m *WorkSpecMeta) bool { return m.Weight == math.MaxInt32 }},
		{"interval huge saturates", map[any]any{"name": "x", "interval": 1e300}, func(m *WorkSpecMeta) bool { return m.Interval == MaxInterval }},
		{"priority bool is int", map[any]any{"name": "x", "priority": true}, func(m *WorkSpecMeta) bool { return m.Priority == 1 }},
		{"max_getwork", map[any]any{"name": "x", "max_getwork": 3}, func(m *WorkSpecMeta) bool { return m.MaxGetwork == 3 }},
		{"max_retries", map[any]any{"name": "x", "max_retries": 4}, func(m *WorkSpecMeta) bool { return m.MaxRetries == 4 }},
		{"min_gb", map[any]any{"name": "x", "min_gb": 1.5}, func(m *WorkSpecMeta) bool { return m.MinGB == 1.5 }},
		{"then", map[any]any{"name": "x", "then": "y"}, func(m *WorkSpecMeta) bool { return m.Then == "y" }},
		{"then bytes", map[any]any{"name": "x", "then": []byte("y")}, func(m *WorkSpecMeta) bool { return m.Then == "y" }},
		{"then_preempts false", map[any]any{"name": "x", "then_preempts": false}, func(m *WorkSpecMeta) bool { return !m.ThenPreempts }},
		{"runtime", map[any]any{"name": "x", "runtime": "go"}, func(m *WorkSpecMeta) bool { return m.Runtime == "go" }},
		{"config map", map[any]any{"name": "x", "config": map[string]any{"a": 1}}, func(m *WorkSpecMeta) bool { return true }},
		{"module and run_function", map[any]any{"name": "x", "module": "m", "run_function": []byte("f"), "desc": "d"}, func(m *WorkSpecMeta) bool { return true }},
		{"non-string extra keys", map[any]any{"name": "x", 7: "seven"}, func(m *WorkSpecMeta) bool { return m.Weight == 20 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, meta, err := ParseWorkSpec(enc(t, tc.def))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(&meta) {
				t.Errorf("meta = %+v", meta)
			}
		})
	}
}

func TestParseWorkSpecErrors(t *testing.T) {
	tests := []struct {
		name string
		def  any
		msg  string
	}{
		{"not a map", []any{1}, "must be a map"},
		{"no name", map[string]any{"weight": 1}, `missing "name"`},
		{"name not string", map[string]any{"name": 3}, `"name" must be a string`},
		{"weight abc", map[string]any{"name": "x", "weight": "abc"}, `"weight" must be an integer, got "abc"`},
		{"weight list", map[string]any{"name": "x", "weight": []int{1}}, `"weight" must be an integer`},
		{"nice", map[string]any{"name": "x", "nice": "n"}, `"nice" must be an integer`},
		{"interval", map[string]any{"name": "x", "interval": "soon"}, `"interval" must be a number`},
		{"interval list", map[string]any{"name": "x", "interval": []int{1}}, `"interval" must be a number`},
		{"max_running", map[string]any{"name": "x", "max_running": "lots"}, `"max_running" must be an integer`},
		{"max_running float string", map[string]any{"name": "x", "max_running": "1.5"}, `"max_running" must be an integer`},
		{"max_getwork", map[string]any{"name": "x", "max_getwork": map[string]int{}}, `"max_getwork" must be an integer`},
		{"nice null without weight", map[string]any{"name": "x", "nice": nil}, `"nice" must be an integer`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseWorkSpec(enc(t, tc.def))
			if !errors.Is(err, ErrInvalidWorkSpec) {
				t.Fatalf("err = %v, want ErrInvalidWorkSpec", err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %q, want it to contain %q", err, tc.msg)
			}
		})
	}
	if _, _, err := ParseWorkSpec(Data{0xa1}); !errors.Is(err, ErrInvalidWorkSpec) {
		t.Errorf("truncated CBOR: err = %v", err)
	}
}

// TestCheckWorkSpecUnusable: values Python stored without reading are
// accepted, listed once each, and read as the key being unset.
func TestCheckWorkSpecUnusable(t *testing.T) {
	def := map[string]any{
		"name": "x", "desc": 5, "config": "settings.yaml", "module": 5,
		"run_function": []string{"f"}, "then": 5, "runtime": 5, "priority": "high",
		"min_gb": "lots", "max_retries": "x",
	}
	p, err := CheckWorkSpec(enc(t, def))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, u := range p.Unusable {
		keys = append(keys, u.Key)
		if u.Got == "" || u.Reading == "" {
			t.Errorf("unusable %+v lacks the value or its reading", u)
		}
	}
	want := []string{"priority", "max_retries", "min_gb", "then", "runtime"}
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Errorf("unusable keys = %v, want %v", keys, want)
	}
	m := p.Meta
	if m.Priority != 0 || m.MaxRetries != 0 || m.MinGB != 0 || m.Then != "" || m.Runtime != "" || m.Weight != DefaultWeight {
		t.Errorf("meta = %+v, want the defaults", m)
	}
	if p, err := CheckWorkSpec(enc(t, map[string]any{"name": "x", "min_gb": [1]int{1}})); err != nil || len(p.Unusable) != 1 {
		t.Errorf("min_gb [1]: %+v, %v", p, err)
	}
}

// TestCheckWorkSpecEcho: get_work_spec_meta's values as Python showed them.
func TestCheckWorkSpecEcho(t *testing.T) {
	p, err := CheckWorkSpec(enc(t, map[string]any{"name": "x", "interval": 10, "continuous": 1, "weight": "7", "max_running": 0}))
	if err != nil {
		t.Fatal(err)
	}
	e := p.Echo
	if string(e.Interval) != string(enc(t, 10)) || string(e.Continuous) != string(enc(t, 1)) {
		t.Errorf("interval %x, continuous %x: want them as given", e.Interval, e.Continuous)
	}
	if e.Weight != 7 || e.MaxRunning == nil || *e.MaxRunning != 0 {
		t.Errorf("weight %d, max_running %v, want 7 and 0", e.Weight, e.MaxRunning)
	}
	p, err = CheckWorkSpec(enc(t, map[string]any{"name": "x", "interval": "2", "nice": 5}))
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Echo.Interval) != string(enc(t, 2.0)) || p.Echo.Weight != 15 || p.Echo.Continuous != nil || p.Echo.MaxRunning != nil {
		t.Errorf("echo = %+v, want interval 2.0 (float()), weight 15, nothing else", p.Echo)
	}
}

func TestEncodeMaxRunning(t *testing.T) {
	for _, v := range []int64{1, 7, 0, -1, -5, math.MaxInt32, math.MinInt32 + 1} {
		m := WorkSpecMeta{MaxRunning: EncodeMaxRunning(v)}
		if got, ok := m.MaxRunningValue(); !ok || int64(got) != v {
			t.Errorf("EncodeMaxRunning(%d) = %d decodes to %d, %v", v, m.MaxRunning, got, ok)
		}
	}
	if m := (WorkSpecMeta{}); func() bool { _, ok := m.MaxRunningValue(); return ok }() {
		t.Error("0 decodes as set, want unlimited")
	}
	if got := EncodeMaxRunning(1e12); got != math.MaxInt32 {
		t.Errorf("EncodeMaxRunning(1e12) = %d, want MaxInt32", got)
	}
}

func TestPyConversions(t *testing.T) {
	ints := []struct {
		v    any
		want int64
		ok   bool
	}{
		{5, 5, true}, {"  12 ", 12, true}, {"+3", 3, true}, {[]byte("-4"), -4, true}, {2.7, 2, true},
		{-2.7, -2, true}, {true, 1, true}, {1e300, math.MaxInt64, true}, {"1.5", 0, false},
		{"1_000", 0, false}, {"abc", 0, false}, {nil, 0, false}, {[]int{1}, 0, false},
		{math.NaN(), 0, false}, {math.Inf(1), 0, false},
	}
	for _, tc := range ints {
		got, ok := PyInt(enc(t, tc.v))
		if got != tc.want || ok != tc.ok {
			t.Errorf("PyInt(%v) = %d, %v; want %d, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
	floats := []struct {
		v    any
		want float64
		ok   bool
	}{
		{5, 5, true}, {" 1.5 ", 1.5, true}, {"1e3", 1000, true}, {false, 0, true}, {"0x10", 0, false},
		{"x", 0, false}, {map[string]int{}, 0, false},
	}
	for _, tc := range floats {
		got, ok := PyFloat(enc(t, tc.v))
		if got != tc.want || ok != tc.ok {
			t.Errorf("PyFloat(%v) = %v, %v; want %v, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}
