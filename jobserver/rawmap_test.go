package jobserver

import (
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

func TestSplitJoinMapKeepsBytes(t *testing.T) {
	// {b'a': (1, 2), 37(h'..'): u'x', 5: [b'y']}: values and keys of every
	// kind must come back byte for byte.
	raw := rawOf(t, map[any]any{
		cbor.ByteString("a"): tuple{1, 2},
		uint64(5):            []any{[]byte("y")},
		"t":                  cbor.Tag{Number: 37, Content: []byte("0123456789abcdef")},
	})
	pairs, err := splitMap(raw)
	if err != nil || len(pairs) != 3 {
		t.Fatalf("splitMap: %v, %v", pairs, err)
	}
	if got := joinMap(pairs); string(got) != string(raw) {
		t.Errorf("joinMap(splitMap(x)) = %x, want %x", got, raw)
	}
	// Indefinite-length map {_ b'k': 1}.
	pairs, err = splitMap([]byte{0xbf, 0x41, 'k', 0x01, 0xff})
	if err != nil || len(pairs) != 1 || string(pairs[0].Value) != "\x01" {
		t.Errorf("indefinite map: %v, %v", pairs, err)
	}
	for _, bad := range [][]byte{{0x80}, {0xa2, 0x01}, {}, {0xbb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}} {
		if _, err := splitMap(bad); err == nil {
			t.Errorf("splitMap(%x) accepted a non-map or truncated map", bad)
		}
	}
}

func TestLookupKeyByteOrText(t *testing.T) {
	raw := rawOf(t, map[any]any{"traceback": "boom", cbor.ByteString("x"): 1})
	if got := lookupKey(raw, "traceback"); string(got) != string(rawOf(t, "boom")) {
		t.Errorf("text key: %x", got)
	}
	if got := lookupKey(raw, "x"); string(got) != "\x01" {
		t.Errorf("byte key: %x", got)
	}
	if lookupKey(raw, "missing") != nil || lookupKey(rawOf(t, []any{}), "x") != nil {
		t.Error("lookupKey found something that is not there")
	}
}

func TestByteifyDefinition(t *testing.T) {
	def := rawOf(t, map[any]any{"name": "ws", "module": "mod", cbor.ByteString("run_function"): "fn", "other": "text"})
	got := diag(t, byteifyDefinition(coordinate.Data(def)))
	expect(t, "byteified", got, `{'run_function': 'fn', "name": "ws", "other": "text", "module": 'mod'}`)

	same := rawOf(t, m{"name": []byte("ws"), "module": []byte("mod")})
	if out := byteifyDefinition(coordinate.Data(same)); &out[0] != &same[0] {
		t.Error("a definition needing no change must be returned as stored")
	}
}
