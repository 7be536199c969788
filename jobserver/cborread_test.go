package jobserver

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An option key the fast path cannot read (indefinite length) still
// counts, through the general decoder.
func TestDecodeOptionsIndefiniteKey(t *testing.T) {
	opts, err := decodeOptions(unhex(t, "a2 5f 43 6d6178 44 5f6a6f62 ff 05 41 78 06"), "options")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(opts["max_job"], []byte{0x05}) || !bytes.Equal(opts["x"], []byte{0x06}) {
		t.Errorf("options = %x", opts)
	}
}

func TestDecodeOptionsLaterDuplicateWins(t *testing.T) {
	opts, err := decodeOptions(unhex(t, "a2 46 737461747573 01 66 737461747573 04"), "options")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(opts["status"], []byte{0x04}) {
		t.Errorf("status = %x, want 04 (the later entry)", opts["status"])
	}
}

// workResult must produce exactly what the generic encoder makes of the
// tuple shapes get_work answered with before.
func TestWorkResultMatchesGenericEncoding(t *testing.T) {
	a := coordinate.Attempt{
		Spec: coordinate.Name{Bytes: "ws"},
		Key:  coordinate.Name{Bytes: "k\u00e9", Text: true},
		Data: coordinate.Data(unhex(t, "a1 41 78 01")),
	}
	noData := a
	noData.Data = nil
	tupleOf := func(a coordinate.Attempt) cborrpc.Tuple {
		return cborrpc.Tuple{nameValue(a.Spec), nameValue(a.Key), rawData(a.Data)}
	}
	cases := []struct {
		attempts []coordinate.Attempt
		single   bool
		want     any
	}{
		{nil, true, pair(cborrpc.Tuple{nil, nil, nil}, nil)},
		{[]coordinate.Attempt{a}, true, pair(tupleOf(a), nil)},
		{nil, false, pair([]any{}, nil)},
		{[]coordinate.Attempt{a, noData}, false, pair([]any{tupleOf(a), tupleOf(noData)}, nil)},
	}
	for i, c := range cases {
		want, err := cborrpc.EncMode().Marshal(c.want)
		if err != nil {
			t.Fatal(err)
		}
		got := workResult(c.attempts, c.single, false).(cbor.RawMessage)
		if !bytes.Equal(got, want) {
			t.Errorf("case %d: workResult = %x, want %x", i, got, want)
		}
	}
}
