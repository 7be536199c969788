package pyvalue

import (
	"math"
	"testing"
)

// Tuple stands for cborrpc.Tuple, recognised by its name and shape.
type Tuple []any

func TestReprOfWireValues(t *testing.T) {
	v := []any{[]byte("a"), "b", uint64(3), int64(-4), 1.5, nil, true, Tuple{uint64(1)}, map[any]any{"k": Tuple{}}}
	if got, want := Repr(v), `['a', u'b', 3, -4, 1.5, None, True, (1,), {u'k': ()}]`; got != want {
		t.Errorf("Repr = %s, want %s", got, want)
	}
	if got, want := WireRepr(v), `['a', u'b', 3L, -4L, 1.5, None, True, (1L,), {u'k': ()}]`; got != want {
		t.Errorf("WireRepr = %s, want %s", got, want)
	}
	if got, want := WirePFormat(map[any]any{"n": uint64(1)}, 4), `{   u'n': 1L}`; got != want {
		t.Errorf("WirePFormat = %s, want %s", got, want)
	}
	if got, want := WireYAMLDump(map[any]any{"port": uint64(5932)}), "!!python/unicode 'port': !!python/long '5932'\n"; got != want {
		t.Errorf("WireYAMLDump = %q, want %q", got, want)
	}
}

// TestFloatStr pins Python 2.7's str() of floats (printed by the Python 2.7
// interpreter of the legacy venv).
func TestFloatStr(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{-1, "-1.0"},
		{-0.7, "-0.7"},
		{86401, "86401.0"},
		{1e10, "10000000000.0"},
		{12345678901, "12345678901.0"},
		{99999999999, "99999999999.0"},
		{1e11, "1e+11"},
		{123456789012, "1.23456789012e+11"},
		{123456789012345, "1.23456789012e+14"},
		{1e16, "1e+16"},
		{1e20, "1e+20"},
		{0.0001, "0.0001"},
		{0.00001, "1e-05"},
		{1.5e-5, "1.5e-05"},
		{0.1, "0.1"},
		{1 / 3.0, "0.333333333333"},
		{2 / 3.0 * 1e5, "66666.6666667"},
		{86400.5, "86400.5"},
		{100000.25, "100000.25"},
		{-0.5, "-0.5"},
		{math.Copysign(0, -1), "-0.0"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
	} {
		if got := FloatStr(tc.in); got != tc.want {
			t.Errorf("FloatStr(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
