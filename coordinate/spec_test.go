package coordinate

import (
	"errors"
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
		{"max_running negative", map[any]any{"name": "x", "max_running": -1}, func(m *WorkSpecMeta) bool { return m.MaxRunning == 0 }},
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
		{"priority", map[string]any{"name": "x", "priority": true}, `"priority" must be an integer`},
		{"interval", map[string]any{"name": "x", "interval": "soon"}, `"interval" must be a number`},
		{"max_running", map[string]any{"name": "x", "max_running": "lots"}, `"max_running" must be an integer`},
		{"max_getwork", map[string]any{"name": "x", "max_getwork": map[string]int{}}, `"max_getwork" must be an integer`},
		{"max_retries", map[string]any{"name": "x", "max_retries": "x"}, `"max_retries" must be an integer`},
		{"min_gb", map[string]any{"name": "x", "min_gb": "big"}, `"min_gb" must be a number`},
		{"then", map[string]any{"name": "x", "then": 5}, `"then" must be a string`},
		{"runtime", map[string]any{"name": "x", "runtime": 5}, `"runtime" must be a string`},
		{"config", map[string]any{"name": "x", "config": "c"}, `"config" must be a map`},
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
