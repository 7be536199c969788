package coordinate

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

func TestParseUnitMeta(t *testing.T) {
	tests := []struct {
		name string
		meta Data
		want WorkUnitInput
	}{
		{"absent", nil, WorkUnitInput{}},
		{"null", Null, WorkUnitInput{}},
		{"empty", EmptyMap, WorkUnitInput{}},
		{"priority int", enc(t, map[string]any{"priority": 5}), WorkUnitInput{Priority: fp(5)}},
		{"priority float", enc(t, map[string]any{"priority": -1.5}), WorkUnitInput{Priority: fp(-1.5)}},
		{"priority byte key", enc(t, map[any]any{cbor.ByteString("priority"): 2}), WorkUnitInput{Priority: fp(2)}},
		{"priority null", enc(t, map[string]any{"priority": nil}), WorkUnitInput{}},
		{"delay", enc(t, map[string]any{"delay": 1.5}), WorkUnitInput{Delay: 1500 * time.Millisecond}},
		{"delay negative", enc(t, map[string]any{"delay": -4}), WorkUnitInput{}},
		{"group", enc(t, map[string]any{"group": "g"}), WorkUnitInput{Group: "g"}},
		{"group bytes", enc(t, map[string]any{"group": []byte("g")}), WorkUnitInput{Group: "g"}},
		{"depends_on", enc(t, map[string]any{"depends_on": []any{[]any{"s", []byte("k")}, tuple([]byte("s2"), "k2")}}),
			WorkUnitInput{DependsOn: []UnitRef{{"s", "k"}, {"s2", "k2"}}}},
		{"depends_on tuple", enc(t, map[string]any{"depends_on": tuple(tuple("s", "k"))}),
			WorkUnitInput{DependsOn: []UnitRef{{"s", "k"}}}},
		{"unknown keys", enc(t, map[any]any{"colour": "red", 5: 6}), WorkUnitInput{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var in WorkUnitInput
			if err := ParseUnitMeta(tc.meta, &in); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(in, tc.want) {
				t.Errorf("got %+v, want %+v", in, tc.want)
			}
		})
	}
}

func TestParseUnitMetaErrors(t *testing.T) {
	tests := []struct {
		name string
		meta any
		msg  string
	}{
		{"not a map", []int{1}, "meta must be a map"},
		{"priority", map[string]any{"priority": "high"}, `"priority" must be a number`},
		{"delay", map[string]any{"delay": "soon"}, `"delay" must be a number`},
		{"group", map[string]any{"group": 3}, `"group" must be a string`},
		{"depends_on not list", map[string]any{"depends_on": "x"}, `"depends_on" must be a list`},
		{"depends_on short pair", map[string]any{"depends_on": []any{[]any{"s"}}}, "item 0 must be a [spec, key] pair"},
		{"depends_on non-string", map[string]any{"depends_on": []any{[]any{"s", 1}}}, "item 0 must hold two strings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var in WorkUnitInput
			err := ParseUnitMeta(enc(t, tc.meta), &in)
			if !errors.Is(err, ErrInvalidWorkUnit) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want ErrInvalidWorkUnit containing %q", err, tc.msg)
			}
		})
	}
}
