package coordinate

import (
	"bytes"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

func TestChainedUnits(t *testing.T) {
	type unit struct {
		key      Name
		data     Data
		priority float64
		delay    time.Duration
	}
	text := func(s string) Name { return Name{Bytes: s, Text: true} }
	tests := []struct {
		name string
		data Data
		want []unit
	}{
		{"not a map", enc(t, []int{1}), nil},
		{"no output", enc(t, map[string]any{"x": 1}), nil},
		{"empty output list", enc(t, map[string]any{"output": []any{}}), nil},
		{"empty output map", enc(t, map[string]any{"output": map[string]any{}}), nil},
		{"null output", enc(t, map[string]any{"output": nil}), nil},
		{"map form", enc(t, map[string]any{"output": map[any]any{"p7": map[string]any{"url": "u7"}, cbor.ByteString("p8"): map[string]any{}}}), []unit{
			{Name{Bytes: "p8"}, EmptyMap, 3, 0}, // canonical order: byte strings first
			{text("p7"), enc(t, map[string]any{"url": "u7"}), 3, 0},
		}},
		{"byte output key", enc(t, map[any]any{cbor.ByteString("output"): []any{"a"}}), []unit{{text("a"), EmptyMap, 3, 0}}},
		{"list of names", enc(t, map[string]any{"output": []any{"a", []byte("b")}}), []unit{
			{text("a"), EmptyMap, 3, 0}, {Name{Bytes: "b"}, EmptyMap, 3, 0},
		}},
		{"tuple list", enc(t, map[string]any{"output": tuple("a")}), []unit{{text("a"), EmptyMap, 3, 0}}},
		{"mixed forms", enc(t, map[string]any{"output": []any{
			[]any{"hot", map[string]any{"n": 1}, map[string]any{"priority": 50}},
			tuple("warm", map[string]any{}, nil, 5),
			[]any{"int4", map[string]any{}, map[string]any{"priority": 1}, 7.5},
			[]any{"later", map[string]any{}, map[string]any{"delay": 600}},
			"plain",
			[]any{"bad"},               // too short: skipped
			[]any{1, map[string]any{}}, // non-string key: skipped
			[]any{"badmeta", map[string]any{}, "meta"},
			[]any{"badprio", map[string]any{}, nil, "p"},
			42, // not a unit: skipped
		}}), []unit{
			{text("hot"), enc(t, map[string]any{"n": 1}), 50, 0},
			{text("warm"), EmptyMap, 5, 0},
			{text("int4"), EmptyMap, 7.5, 0},
			{text("later"), EmptyMap, 3, 600 * time.Second},
			{text("plain"), EmptyMap, 3, 0},
		}},
		{"output string is not a form", enc(t, map[string]any{"output": "x"}), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ChainedUnits(tc.data, 3)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d units %+v, want %d", len(got), got, len(tc.want))
			}
			// The map form follows encoded order, which is canonical here.
			for i, w := range tc.want {
				g := got[i]
				if g.Key != w.key || !bytes.Equal(g.Data, w.data) || g.Priority == nil || *g.Priority != w.priority || g.Delay != w.delay {
					t.Errorf("unit %d = %#v (priority %v), want %+v", i, g, g.Priority, w)
				}
			}
		})
	}
}

func TestChainedUnitsKeepsDataBytes(t *testing.T) {
	// A float16 and an indefinite-length map must pass through untouched.
	inner := Data{0xbf, 0x61, 'a', 0xf9, 0x3c, 0x00, 0xff}
	data := append(Data{0xa1, 0x66, 'o', 'u', 't', 'p', 'u', 't', 0xa1, 0x61, 'k'}, inner...)
	got := ChainedUnits(data, 0)
	if len(got) != 1 || !bytes.Equal(got[0].Data, inner) {
		t.Fatalf("got %#v", got)
	}
}
