package cborrpc

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// unhex decodes a byte vector written as in PROTOCOL §9 (spaces allowed).
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad test vector %q: %v", s, err)
	}
	return b
}

// Request vectors of PROTOCOL §9, exactly as a Python 2 client sends them.
var (
	vecListWorkSpecs = `D8 18 58 25 A3 42 69 64 01 46 6D 65 74 68 6F 64
		4F 6C 69 73 74 5F 77 6F 72 6B 5F 73 70 65 63 73 46 70 61 72 61 6D 73 81 A0`
	vecGetWork = `D8 18 58 3B A3 42 69 64 07 46 6D 65 74 68 6F 64 48 67 65 74 5F 77 6F 72 6B
		46 70 61 72 61 6D 73 82 44 39 66 33 61 A2
		4A 6C 65 61 73 65 5F 74 69 6D 65 19 03 84 48 6D 61 78 5F 6A 6F 62 73 01`
	vecAddWorkUnits = `D8 18 58 3B A3 42 69 64 03 46 6D 65 74 68 6F 64
		4E 61 64 64 5F 77 6F 72 6B 5F 75 6E 69 74 73 46 70 61 72 61 6D 73 82 43 77 73 31
		82 D8 80 82 43 77 75 31 A1 41 78 01 D8 80 82 43 77 75 32 A0`
	vecUpdateWorkUnit = `D8 18 58 49 A3 42 69 64 05 46 6D 65 74 68 6F 64
		50 75 70 64 61 74 65 5F 77 6F 72 6B 5F 75 6E 69 74 46 70 61 72 61 6D 73 83
		43 77 73 31 43 77 75 31 A2 46 73 74 61 74 75 73 04
		44 64 61 74 61 A2 41 78 01 46 6F 75 74 70 75 74 81 41 61`
)

// readOne runs a complete frame through the server's reader and parser.
func readOne(t *testing.T, frame []byte) Request {
	t.Helper()
	fr := frameReader{r: bufioReader(frame), limit: DefaultMaxRequestSize}
	item, err := fr.next()
	if err != nil {
		t.Fatalf("reading frame: %v", err)
	}
	c, closeConn, err := parseTop(item, nil)
	if err != nil || closeConn || c.batch != nil || c.reqErr != "" {
		t.Fatalf("parse: call %+v close %v err %v", c, closeConn, err)
	}
	return c.req
}

func rawEq(t *testing.T, what string, got cbor.RawMessage, want string) {
	t.Helper()
	if !bytes.Equal(got, unhex(t, want)) {
		t.Errorf("%s = % X, want %s", what, []byte(got), want)
	}
}

func TestDecodeProtocolVectors(t *testing.T) {
	t.Run("9.1 list_work_specs", func(t *testing.T) {
		b := unhex(t, vecListWorkSpecs)
		if len(b) != 41 {
			t.Fatalf("vector is %d bytes, §9.1 says 41", len(b))
		}
		req := readOne(t, b)
		rawEq(t, "id", req.ID, "01")
		if req.Method != "list_work_specs" || len(req.Params) != 1 {
			t.Fatalf("got %+v", req)
		}
		rawEq(t, "params[0]", req.Params[0], "A0")
	})
	t.Run("9.2 get_work", func(t *testing.T) {
		b := unhex(t, vecGetWork)
		if len(b) != 63 {
			t.Fatalf("vector is %d bytes, §9.2 says 63", len(b))
		}
		req := readOne(t, b)
		rawEq(t, "id", req.ID, "07")
		if req.Method != "get_work" || len(req.Params) != 2 {
			t.Fatalf("got %+v", req)
		}
		rawEq(t, "worker id", req.Params[0], "44 39 66 33 61")
		rawEq(t, "options", req.Params[1], "A2 4A 6C 65 61 73 65 5F 74 69 6D 65 19 03 84 48 6D 61 78 5F 6A 6F 62 73 01")
	})
	t.Run("9.3 add_work_units", func(t *testing.T) {
		b := unhex(t, vecAddWorkUnits)
		if len(b) != 63 {
			t.Fatalf("vector is %d bytes, §9.3 says 63", len(b))
		}
		req := readOne(t, b)
		rawEq(t, "id", req.ID, "03")
		if req.Method != "add_work_units" || len(req.Params) != 2 {
			t.Fatalf("got %+v", req)
		}
		rawEq(t, "spec", req.Params[0], "43 77 73 31")
		rawEq(t, "units", req.Params[1], "82 D8 80 82 43 77 75 31 A1 41 78 01 D8 80 82 43 77 75 32 A0")
	})
	t.Run("9.5 update_work_unit", func(t *testing.T) {
		b := unhex(t, vecUpdateWorkUnit)
		if len(b) != 4+0x49 {
			t.Fatalf("vector is %d bytes, head says %d", len(b), 4+0x49)
		}
		req := readOne(t, b)
		rawEq(t, "id", req.ID, "05")
		if req.Method != "update_work_unit" || len(req.Params) != 3 {
			t.Fatalf("got %+v", req)
		}
		rawEq(t, "key", req.Params[1], "43 77 75 31")
		rawEq(t, "options", req.Params[2], "A2 46 73 74 61 74 75 73 04 44 64 61 74 61 A2 41 78 01 46 6F 75 74 70 75 74 81 41 61")
	})
}

// TestEncodeRequestMatchesPythonClient checks our client encoder produces
// the exact bytes of §9 from Go values shaped like the Python call.
func TestEncodeRequestMatchesPythonClient(t *testing.T) {
	cases := []struct {
		name   string
		id     any
		method string
		params []any
		want   string
	}{
		{"9.1", 1, "list_work_specs", []any{map[string]any{}}, vecListWorkSpecs},
		{"9.2", 7, "get_work", []any{[]byte("9f3a"), cbor.RawMessage(unhex(t,
			"A2 4A 6C 65 61 73 65 5F 74 69 6D 65 19 03 84 48 6D 61 78 5F 6A 6F 62 73 01"))}, vecGetWork},
		{"9.3", 3, "add_work_units", []any{[]byte("ws1"), []any{
			Tuple{[]byte("wu1"), map[cbor.ByteString]any{"x": 1}},
			Tuple{[]byte("wu2"), map[cbor.ByteString]any{}},
		}}, vecAddWorkUnits},
	}
	for _, tc := range cases {
		got, err := EncodeRequest(tc.id, tc.method, tc.params...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if want := unhex(t, tc.want); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got % X\nwant % X", tc.name, got, want)
		}
	}
}

// TestEncodeProtocolResponses encodes the documented responses and
// compares bytes exactly. Our key order (bytewise sorted: b'id' before
// b'result'/b'error') is the order §9 lists.
func TestEncodeProtocolResponses(t *testing.T) {
	cases := []struct {
		name   string
		id     string
		result any
		errMsg string
		want   string
	}{
		{"9.1 ([], None)", "01", Tuple{[]any{}, nil}, "",
			"D8 18 51 A2 42 69 64 01 46 72 65 73 75 6C 74 D8 80 82 80 F6"},
		{"9.2 work", "07", Tuple{Tuple{[]byte("ws1"), []byte("wu1"), cbor.RawMessage{0xA1, 0x41, 'x', 0x01}}, nil}, "",
			"D8 18 58 1F A2 42 69 64 07 46 72 65 73 75 6C 74 D8 80 82 D8 80 83 43 77 73 31 43 77 75 31 A1 41 78 01 F6"},
		{"9.2 work as map data", "07", Tuple{Tuple{[]byte("ws1"), []byte("wu1"), map[cbor.ByteString]int{"x": 1}}, nil}, "",
			"D8 18 58 1F A2 42 69 64 07 46 72 65 73 75 6C 74 D8 80 82 D8 80 83 43 77 73 31 43 77 75 31 A1 41 78 01 F6"},
		{"9.2 no work", "07", Tuple{Tuple{nil, nil, nil}, nil}, "",
			"D8 18 56 A2 42 69 64 07 46 72 65 73 75 6C 74 D8 80 82 D8 80 83 F6 F6 F6 F6"},
		{"9.2 no work, list", "08", Tuple{[]any{}, nil}, "",
			"D8 18 51 A2 42 69 64 08 46 72 65 73 75 6C 74 D8 80 82 80 F6"},
		{"9.3 (True, None)", "03", Tuple{true, nil}, "",
			"D8 18 51 A2 42 69 64 03 46 72 65 73 75 6C 74 D8 80 82 F5 F6"},
		{"9.4 integer keys", "04", Tuple{map[int]int{3: 1, 1: 1}, nil}, "",
			"D8 18 55 A2 42 69 64 04 46 72 65 73 75 6C 74 D8 80 82 A2 01 01 03 01 F6"},
		{"9.6 error", "09", nil, "KeyError('name',)\n",
			"D8 18 58 27 A2 42 69 64 09 45 65 72 72 6F 72 A1 47 6D 65 73 73 61 67 65 52 4B 65 79 45 72 72 6F 72 28 27 6E 61 6D 65 27 2C 29 0A"},
	}
	for _, tc := range cases {
		var payload []byte
		if tc.errMsg != "" {
			payload = appendError(nil, unhex(t, tc.id), tc.errMsg)
		} else {
			var err error
			if payload, err = appendResult(nil, unhex(t, tc.id), tc.result); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		got := appendWrapped(nil, payload)
		if want := unhex(t, tc.want); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got % X\nwant % X", tc.name, got, want)
		}
	}
}

func TestEncodeOtherValues(t *testing.T) {
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"float 7.5 as FB", 7.5, "FB 40 1E 00 00 00 00 00 00"},
		{"float32 widened to FB", float32(7.5), "FB 40 1E 00 00 00 00 00 00"},
		{"float in a map stays FB", map[cbor.ByteString]any{"a": 1.0}, "A1 41 61 FB 3F F0 00 00 00 00 00 00"},
		{"empty tuple", Tuple{}, "D8 80 80"},
		{"state (1, 3)", Tuple{1, 3}, "D8 80 82 01 03"},
		{"tuple inside a map", map[string]any{"t": Tuple{1}}, "A1 61 74 D8 80 81 01"},
		{"nil result", nil, "F6"},
		{"text", "kü", "63 6B C3 BC"},
		{"bytes", []byte{0xff, 0x80}, "42 FF 80"},
		{"negative", -500, "39 01 F3"},
		{"big uint", uint64(1) << 40, "1B 00 00 01 00 00 00 00 00"},
		{"sorted mixed keys", map[any]any{cbor.ByteString("b"): 1, cbor.ByteString("a"): 2, 5: 3}, "A3 05 03 41 61 02 41 62 01"},
		{"raw message verbatim", cbor.RawMessage{0xD8, 0x25, 0x41, 0x00}, "D8 25 41 00"},
	}
	for _, tc := range cases {
		got, err := appendValue(nil, tc.v)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if want := unhex(t, tc.want); !bytes.Equal(got, want) {
			t.Errorf("%s: got % X want % X", tc.name, got, want)
		}
	}
}

func TestEncodeRejectsCorruptRawMessage(t *testing.T) {
	for _, raw := range []string{"A1 41", "01 02", "C1 00", "FF"} {
		if _, err := appendValue(nil, Tuple{cbor.RawMessage(unhex(t, raw))}); err == nil {
			t.Errorf("raw % s accepted", raw)
		}
	}
	// Over the wire the client gets an error response, and the stream
	// stays in sync.
	payload, err := appendResult(nil, []byte{1}, Tuple{cbor.RawMessage{0xA1}})
	if err == nil {
		t.Fatalf("corrupt result encoded: % X", payload)
	}
}
