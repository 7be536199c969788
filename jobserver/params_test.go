package jobserver

import (
	"math"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
)

func rawOf(t *testing.T, v any) cbor.RawMessage {
	t.Helper()
	b, err := cborrpc.EncMode().Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSignatureBind(t *testing.T) {
	sig := signature{method: "archive", names: []string{"options"}, required: 0}
	got, err := sig.bind(&cborrpc.Request{})
	if err != nil || len(got) != 1 || got[0] != nil {
		t.Errorf("omitted optional param: got %v, %v", got, err)
	}
	two := signature{method: "get_work", names: []string{"worker_id", "options"}, required: 2}
	if _, err := two.bind(&cborrpc.Request{Params: []cbor.RawMessage{rawOf(t, "w")}}); err == nil ||
		!strings.Contains(err.Error(), "takes exactly 2 arguments (1 given)") {
		t.Errorf("missing param: err = %v", err)
	}
	three := []cbor.RawMessage{rawOf(t, "w"), rawOf(t, m{}), rawOf(t, 1)}
	if _, err := two.bind(&cborrpc.Request{Params: three}); err == nil || !strings.HasPrefix(err.Error(), "TypeError(") {
		t.Errorf("extra param: err = %v", err)
	}
	named := &cborrpc.Request{NamedParams: map[string]cbor.RawMessage{"options": rawOf(t, m{}), "worker_id": rawOf(t, "w")}}
	got, err = two.bind(named)
	if err != nil || string(got[0]) != string(rawOf(t, "w")) || string(got[1]) != string(rawOf(t, m{})) {
		t.Errorf("named params: got %x, %v", got, err)
	}
	named.NamedParams["bogus"] = rawOf(t, 1)
	if _, err := two.bind(named); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown keyword: err = %v", err)
	}
}

func TestDecodeNameKeepsKind(t *testing.T) {
	n, err := decodeName(rawOf(t, []byte("k\x00\xff")), "key")
	if err != nil || n != (coordinate.Name{Bytes: "k\x00\xff"}) {
		t.Errorf("byte string: %+v, %v", n, err)
	}
	n, err = decodeName(rawOf(t, "kü"), "key")
	if err != nil || n != (coordinate.Name{Bytes: "kü", Text: true}) {
		t.Errorf("text string: %+v, %v", n, err)
	}
	if _, err := decodeName(rawOf(t, 5), "key"); err == nil || !strings.Contains(err.Error(), "key must be a string") {
		t.Errorf("integer: err = %v", err)
	}
}

func TestDecodeListAcceptsArrayAndTuple(t *testing.T) {
	for _, v := range []any{[]any{1, 3}, tuple{1, 3}} {
		st, err := decodeStatuses(rawOf(t, v), "state")
		if err != nil || len(st) != 2 || st[0] != 1 || st[1] != 3 {
			t.Errorf("decodeStatuses(%#v) = %v, %v", v, st, err)
		}
	}
	st, err := decodeStatuses(rawOf(t, 4), "state")
	if err != nil || len(st) != 1 || st[0] != 4 {
		t.Errorf("single state: %v, %v", st, err)
	}
	if _, err := decodeList(rawOf(t, cbor.Tag{Number: 37, Content: []byte("0123456789abcdef")}), "x"); err == nil {
		t.Error("a tag other than 128 must not pass as a list")
	}
	if _, err := decodeList(rawOf(t, m{}), "x"); err == nil {
		t.Error("a map must not pass as a list")
	}
}

func TestDecodeOptionsByteAndTextKeys(t *testing.T) {
	raw := rawOf(t, map[any]any{cbor.ByteString("limit"): 5, "start": "a", uint64(7): "ignored"})
	o, err := decodeOptions(raw, "options")
	if err != nil {
		t.Fatal(err)
	}
	if !o.present("limit") || !o.present("start") || len(o) != 2 {
		t.Errorf("options = %v", o)
	}
	if _, err := decodeOptions(rawOf(t, []any{}), "options"); err == nil {
		t.Error("a list must not pass as options")
	}
}

func TestDecodeNumbers(t *testing.T) {
	for v, want := range map[any]float64{uint64(900): 900, int64(-1): -1, 7.5: 7.5} {
		got, err := decodeNumber(rawOf(t, v), "n")
		if err != nil || got != want {
			t.Errorf("decodeNumber(%v) = %v, %v", v, got, err)
		}
	}
	// Python's float() read numeric strings; others stay errors.
	if f, err := decodeNumber(rawOf(t, " 9.5"), "n"); err != nil || f != 9.5 {
		t.Errorf("decodeNumber(\" 9.5\") = %v, %v; want 9.5", f, err)
	}
	for _, bad := range []any{"soon", []any{1}, nil} {
		if _, err := decodeNumber(rawOf(t, bad), "n"); err == nil {
			t.Errorf("decodeNumber(%#v) passed", bad)
		}
	}
	// Python's int() truncated floats and read integer strings.
	for v, want := range map[any]int64{2.7: 2, "2": 2, cbor.ByteString(" -3 "): -3, true: 1} {
		if n, err := decodePyInt(rawOf(t, v), "n"); err != nil || n != want {
			t.Errorf("decodePyInt(%#v) = %v, %v; want %d", v, n, err, want)
		}
	}
	for _, bad := range []any{"2.5", "two", []any{2}, math.NaN()} {
		if _, err := decodePyInt(rawOf(t, bad), "n"); err == nil {
			t.Errorf("decodePyInt(%#v) passed", bad)
		}
	}
	// A lone string is a one-element list of names.
	if ns, err := decodeNames(rawOf(t, "abc"), "names"); err != nil || len(ns) != 1 || ns[0].Bytes != "abc" {
		t.Errorf("decodeNames(\"abc\") = %+v, %v; want [abc]", ns, err)
	}
	if n, err := decodeInt(rawOf(t, 2.0), "n"); err != nil || n != 2 {
		t.Errorf("integral float: %v, %v", n, err)
	}
	if _, err := decodeInt(rawOf(t, 2.5), "n"); err == nil {
		t.Error("2.5 must not pass as an integer")
	}
	for v, want := range map[any]bool{true: true, false: false, uint64(0): false, uint64(1): true} {
		got, err := decodeTruth(rawOf(t, v), "b")
		if err != nil || got != want {
			t.Errorf("decodeTruth(%v) = %v, %v", v, got, err)
		}
	}
	if _, err := decodeTruth(cbor.RawMessage{0x82, 0x01}, "b"); err == nil {
		t.Error("decodeTruth of a truncated array: no error")
	}
}
