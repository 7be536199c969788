package coordinate

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

func TestWithTraceback(t *testing.T) {
	decode := func(d Data) map[any]any {
		t.Helper()
		var m map[any]any
		if err := rawDecMode.Unmarshal(d, &m); err != nil {
			t.Fatalf("result %x is not a map: %v", d, err)
		}
		return m
	}
	tests := []struct {
		name string
		data Data
		want map[any]any
	}{
		{"null", Null, map[any]any{"traceback": "boom"}},
		{"list", enc(t, []int{1}), map[any]any{"traceback": "boom"}},
		{"empty map", EmptyMap, map[any]any{"traceback": "boom"}},
		{"keeps entries", enc(t, map[any]any{"a": []byte{1}, uint64(7): "x"}), map[any]any{"a": []byte{1}, uint64(7): "x", "traceback": "boom"}},
		{"replaces text key", enc(t, map[string]any{"traceback": "old", "b": 2}), map[any]any{"traceback": "boom", "b": uint64(2)}},
		{"replaces byte key", enc(t, map[any]any{cbor.ByteString("traceback"): "old"}), map[any]any{"traceback": "boom"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decode(WithTraceback(tc.data, "boom"))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
	// Entries are kept byte for byte, including a float16.
	in := Data{0xa1, 0x61, 'f', 0xf9, 0x3c, 0x00}
	if out := WithTraceback(in, "x"); !bytes.HasPrefix(out[1:], in[1:]) {
		t.Errorf("entry not kept verbatim: %x", out)
	}
	// Long values and many entries use longer heads.
	long := strings.Repeat("y", 70000)
	if got := decode(WithTraceback(Null, long))["traceback"]; got != long {
		t.Errorf("long traceback lost")
	}
	many := map[int]int{}
	for i := range 30 {
		many[i] = i
	}
	if got := decode(WithTraceback(enc(t, many), "z")); len(got) != 31 {
		t.Errorf("got %d entries, want 31", len(got))
	}
}
