package cborx

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLenAgreesWithDecoder checks the fast item walker against
// fxamacker on well-formed items of every major type, followed by junk.
func TestLenAgreesWithDecoder(t *testing.T) {
	for _, item := range []string{
		"00", "17", "18 ff", "19 0100", "1a 00010000", "1b 0000000100000000",
		"20", "3b 7fffffffffffffff", "f4", "f5", "f6", "f7", "f9 3c00", "fa 3f800000",
		"fb 3ff0000000000000", "40", "43 616263", "63 616263", "5f 41 61 41 62 ff",
		"7f 61 61 ff", "80", "83 01 02 03", "9f 01 9f ff ff", "a0", "a2 41 61 01 61 62 82 01 02",
		"bf 41 61 01 ff", "d8 80 82 41 61 f6", "c2 49 010000000000000000",
	} {
		b := unhex(t, item)
		var raw cbor.RawMessage
		rest, err := oracle.UnmarshalFirst(append(b, 0x00, 0x01), &raw)
		if err != nil {
			t.Fatalf("%s: fxamacker rejects the test item: %v", item, err)
		}
		n, ok := Len(append(b, 0x00, 0x01))
		if !ok || n != len(raw) || len(rest) != 2 {
			t.Errorf("Len(%s) = %d, %v; want %d", item, n, ok, len(raw))
		}
	}
}

func TestLenRejectsTruncatedAndMalformed(t *testing.T) {
	for _, item := range []string{
		"", "18", "19 01", "43 6162", "83 01 02", "a1 01", "9f 01", "5f 41 61",
		"1c", "ff", "d8", "bb ffffffffffffffff",
	} {
		if n, ok := Len(unhex(t, item)); ok {
			t.Errorf("Len(%q) = %d, ok; want rejection", item, n)
		}
	}
	deep := bytes.Repeat([]byte{0x81}, lenMaxDepth+2)
	if _, ok := Len(append(deep, 0x00)); ok {
		t.Error("Len accepted nesting deeper than lenMaxDepth")
	}
}

func TestElementsAndPairs(t *testing.T) {
	scratch := make([]cbor.RawMessage, 0, 4)
	items, ok := List(scratch, unhex(t, "d8 80 82 41 61 a1 41 6e 01"))
	if !ok || len(items) != 2 || &items[0] != &scratch[:1][0] {
		t.Fatalf("List on a tuple = %x, %v; want 2 items in the scratch space", items, ok)
	}
	if _, ok := List(nil, unhex(t, "a1 41 6e 01")); ok {
		t.Error("List accepted a map")
	}
	if items, ok := List(nil, unhex(t, "9f 01 02 ff")); !ok || len(items) != 2 {
		t.Errorf("indefinite list = %x, %v", items, ok)
	}
	pairs, ok := Pairs(unhex(t, "bf 41 61 01 61 62 82 01 02 ff"))
	if !ok || len(pairs) != 2 || !bytes.Equal(pairs[1].Value, unhex(t, "82 01 02")) {
		t.Fatalf("Pairs = %x, %v", pairs, ok)
	}
	if got := AppendMap(nil, pairs); !bytes.Equal(got, unhex(t, "a2 41 61 01 61 62 82 01 02")) {
		t.Errorf("AppendMap = % x", got)
	}
	if _, ok := Pairs(unhex(t, "a1 41 61")); ok {
		t.Error("Pairs accepted a map missing a value")
	}
}

func TestString(t *testing.T) {
	cases := []struct {
		item     string
		want     string
		text, ok bool
	}{
		{"43 616263", "abc", false, true},
		{"63 616263", "abc", true, true},
		{"40", "", false, true},
		{"62 c328", "", false, false}, // invalid UTF-8 text
		{"5f 41 61 ff", "", false, false},
		{"01", "", false, false},
		{"44 6162", "", false, false},
	}
	for _, c := range cases {
		s, text, ok := String(unhex(t, c.item))
		if string(s) != c.want || text != c.text || ok != c.ok {
			t.Errorf("String(%s) = %q, %v, %v; want %q, %v, %v", c.item, s, text, ok, c.want, c.text, c.ok)
		}
	}
}
