package coordinate

import (
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

func TestRawListForms(t *testing.T) {
	tests := []struct {
		name string
		d    Data
		n    int
		ok   bool
	}{
		{"definite", Data{0x82, 0x01, 0x02}, 2, true},
		{"indefinite", Data{0x9f, 0x01, 0x02, 0x03, 0xff}, 3, true},
		{"tuple", Data{0xd8, 0x80, 0x82, 0x01, 0x02}, 2, true},
		{"tuple indefinite", Data{0xd8, 0x80, 0x9f, 0xff}, 0, true},
		{"other tag", Data{0xc1, 0x82, 0x01, 0x02}, 0, false},
		{"map", Data{0xa0}, 0, false},
	}
	for _, tc := range tests {
		elems, ok, err := rawList(tc.d)
		if err != nil || ok != tc.ok || len(elems) != tc.n {
			t.Errorf("%s: rawList = %d elems, %v, %v; want %d, %v", tc.name, len(elems), ok, err, tc.n, tc.ok)
		}
	}
	if _, _, err := rawList(Data{0x83, 0x01}); err == nil {
		t.Error("truncated array: no error")
	}
	if _, _, err := rawList(Data{0x9f, 0x01}); err == nil {
		t.Error("unterminated indefinite array: no error")
	}
}

func TestRawMapIndefinite(t *testing.T) {
	// {_ "weight": 3, "name": "x"}
	d := Data{0xbf, 0x66, 'w', 'e', 'i', 'g', 'h', 't', 0x03, 0x64, 'n', 'a', 'm', 'e', 0x61, 'x', 0xff}
	name, meta, err := ParseWorkSpec(d)
	if err != nil || name.Bytes != "x" || meta.Weight != 3 {
		t.Errorf("ParseWorkSpec(indefinite map) = %v, %+v, %v", name, meta, err)
	}
}

// describe quotes at most 40 bytes of a string, cut where a character
// starts so the message does not end in half a character.
func TestDescribeCutsOnACharacter(t *testing.T) {
	s := strings.Repeat("x", 39) + "€" // the 40-byte cut falls inside €
	d, err := cbor.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(d), `"`+strings.Repeat("x", 39)+`"...`; got != want {
		t.Errorf("describe = %s, want %s", got, want)
	}
}
