package pyvalue

import "testing"

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
