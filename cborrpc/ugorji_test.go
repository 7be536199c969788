package cborrpc

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"github.com/ugorji/go/codec"
)

// These tests cross-check our codec against a second, independent CBOR
// implementation (ugorji/go/codec), so a mistake shared by our encoder and
// our decoder cannot hide.

func ugorjiDecode(t *testing.T, b []byte) any {
	t.Helper()
	var h codec.CborHandle
	var v any
	if err := codec.NewDecoderBytes(b, &h).Decode(&v); err != nil {
		t.Fatalf("ugorji cannot decode % X: %v", b, err)
	}
	return v
}

func ugorjiEncode(t *testing.T, v any) []byte {
	t.Helper()
	var h codec.CborHandle
	var out []byte
	if err := codec.NewEncoderBytes(&out, &h).Encode(v); err != nil {
		t.Fatalf("ugorji cannot encode %#v: %v", v, err)
	}
	return out
}

// ext asserts v is a CBOR tag with this number and returns its content.
func ext(t *testing.T, what string, v any, tag uint64) any {
	t.Helper()
	re, ok := v.(*codec.RawExt)
	if !ok {
		if r, ok2 := v.(codec.RawExt); ok2 {
			re = &r
		} else {
			t.Fatalf("%s: want tag %d, got %T %#v", what, tag, v, v)
		}
	}
	if re.Tag != tag {
		t.Fatalf("%s: want tag %d, got tag %d", what, tag, re.Tag)
	}
	return re.Value
}

func TestResponsesDecodeWithUgorji(t *testing.T) {
	uuid := cbor.RawMessage(unhex(t, "D8 25 50 01 23 45 67 89 AB CD EF 01 23 45 67 89 AB CD EF"))
	result := Tuple{
		Tuple{[]byte("ws1"), "kü", map[cbor.ByteString]any{"f": 2.5, "u": uuid, "l": []any{int64(-3), uint64(1) << 40}}},
		nil,
	}
	payload, err := appendResult(nil, []byte{0x07}, result)
	if err != nil {
		t.Fatal(err)
	}
	frame := appendWrapped(nil, payload)

	inner := ext(t, "envelope", ugorjiDecode(t, frame), 24)
	raw, ok := inner.([]byte)
	if !ok || !bytes.Equal(raw, payload) {
		t.Fatalf("tag 24 content: %T % X", inner, inner)
	}
	env, ok := ugorjiDecode(t, payload).(map[any]any)
	if !ok {
		t.Fatalf("envelope is %T", ugorjiDecode(t, payload))
	}
	if env["id"] != uint64(7) {
		t.Errorf("id = %#v", env["id"])
	}
	pair, ok := ext(t, "result", env["result"], TagTuple).([]any)
	if !ok || len(pair) != 2 || pair[1] != nil {
		t.Fatalf("result pair = %#v", pair)
	}
	triple, ok := ext(t, "triple", pair[0], TagTuple).([]any)
	if !ok || len(triple) != 3 {
		t.Fatalf("triple = %#v", triple)
	}
	if b, ok := triple[0].([]byte); !ok || string(b) != "ws1" {
		t.Errorf("spec name: want byte string ws1, got %T %#v", triple[0], triple[0])
	}
	if s, ok := triple[1].(string); !ok || s != "kü" {
		t.Errorf("key: want text kü, got %T %#v", triple[1], triple[1])
	}
	data, ok := triple[2].(map[any]any)
	if !ok {
		t.Fatalf("data = %T", triple[2])
	}
	if data["f"] != 2.5 {
		t.Errorf("float = %#v", data["f"])
	}
	if u, ok := ext(t, "uuid", data["u"], 37).([]byte); !ok || len(u) != 16 || u[0] != 0x01 {
		t.Errorf("uuid content = %#v", u)
	}
	if l := data["l"].([]any); l[0] != int64(-3) || l[1] != uint64(1)<<40 {
		t.Errorf("ints = %#v", l)
	}
	// Floats are float64 on the wire (PROTOCOL §2.2).
	if !bytes.Contains(payload, unhex(t, "FB 40 04 00 00 00 00 00 00")) {
		t.Errorf("2.5 is not encoded as FB in % X", payload)
	}

	// Error responses: byte-string message.
	errFrame := appendWrapped(nil, appendError(nil, nil, "boom"))
	env = ugorjiDecode(t, ext(t, "envelope", ugorjiDecode(t, errFrame), 24).([]byte)).(map[any]any)
	if env["id"] != nil {
		t.Errorf("missing id must echo null, got %#v", env["id"])
	}
	msg := env["error"].(map[any]any)["message"]
	if b, ok := msg.([]byte); !ok || string(b) != "boom" {
		t.Errorf("message: want byte string, got %T %#v", msg, msg)
	}
	if _, has := env["result"]; has {
		t.Error("error response carries a result key")
	}
}

func TestUgorjiRequestsDecodeWithOurs(t *testing.T) {
	// Text-string envelope keys and method (what a non-Python client may
	// send), a tag-128 tuple, a float, bytes, and a bignum.
	reqMap := map[string]any{
		"id":     uint64(5),
		"method": "echo",
		"params": []any{
			[]byte("wu\xff"),
			codec.RawExt{Tag: TagTuple, Value: []any{uint64(1), uint64(3)}},
			2.5,
			codec.RawExt{Tag: 2, Value: []byte{1, 0, 0, 0, 0, 0, 0, 0, 0}},
		},
	}
	payload := ugorjiEncode(t, reqMap)
	frame := ugorjiEncode(t, codec.RawExt{Tag: 24, Value: payload})
	if frame[0] != 0xD8 || frame[1] != 24 {
		t.Fatalf("ugorji envelope starts % X", frame[:2])
	}
	req := readOne(t, frame)
	if req.Method != "echo" || len(req.Params) != 4 {
		t.Fatalf("parsed %+v", req)
	}
	rawEq(t, "id", req.ID, "05")
	rawEq(t, "bytes", req.Params[0], "43 77 75 FF")
	rawEq(t, "tuple", req.Params[1], "D8 80 82 01 03")
	rawEq(t, "float", req.Params[2], "FB 40 04 00 00 00 00 00 00")
	rawEq(t, "bignum", req.Params[3], "C2 49 01 00 00 00 00 00 00 00 00")

	// The same values through our decoder keep their Go types.
	var tup any
	if err := DecMode().Unmarshal(req.Params[1], &tup); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tup, Tuple{uint64(1), uint64(3)}) {
		t.Errorf("tuple decoded as %#v", tup)
	}

	// And over the wire, the server echoes the params back unchanged.
	ts := startServer(t, ServerOptions{})
	nc, fr := ts.rawConn(t)
	nc.Write(frame)
	got, err := fr.next()
	if err != nil {
		t.Fatal(err)
	}
	env := ugorjiDecode(t, got).(map[any]any)
	echoed := ext(t, "echo result", env["result"], TagTuple).([]any)
	if b, ok := echoed[0].([]byte); !ok || string(b) != "wu\xff" {
		t.Errorf("bytes came back as %T %#v", echoed[0], echoed[0])
	}
	if v := ext(t, "echoed tuple", echoed[1], TagTuple).([]any); !reflect.DeepEqual(v, []any{uint64(1), uint64(3)}) {
		t.Errorf("tuple came back as %#v", v)
	}
	if echoed[2] != 2.5 {
		t.Errorf("float came back as %#v", echoed[2])
	}
}
