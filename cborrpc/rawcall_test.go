package cborrpc

import (
	"bytes"
	"errors"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

func TestCallRawReturnsEncodedResult(t *testing.T) {
	ts := startServer(t, ServerOptions{})
	c := ts.dial(t)
	for round := 0; round < 2; round++ { // ids advance and still match
		res, err := c.CallRaw("echo", []byte("ws"), cbor.RawMessage{0xA1, 0x41, 'x', 0x01}, Tuple{1})
		if err != nil {
			t.Fatal(err)
		}
		want := unhex(t, "D8 80 83 42 7773 A1 41 78 01 D8 80 81 01")
		if !bytes.Equal(res, want) {
			t.Fatalf("round %d: result % x, want % x", round, []byte(res), want)
		}
		elems, tuple, err := ListElements(res)
		if err != nil || !tuple || len(elems) != 3 {
			t.Fatalf("ListElements = %x, %v, %v", elems, tuple, err)
		}
		if s, ok := StringContent(elems[0]); !ok || string(s) != "ws" {
			t.Errorf("StringContent(%x) = %q, %v", []byte(elems[0]), s, ok)
		}
		if _, ok := StringContent(elems[1]); ok {
			t.Error("StringContent accepted a map")
		}
		inner, tuple, err := ListElements(elems[2])
		if err != nil || !tuple || len(inner) != 1 || inner[0][0] != 0x01 {
			t.Errorf("inner tuple = %x, %v, %v", inner, tuple, err)
		}
	}
}

func TestCallRawErrorResponse(t *testing.T) {
	ts := startServer(t, ServerOptions{})
	c := ts.dial(t)
	_, err := c.CallRaw("fail", "bad thing")
	var rpcErr *RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Message != "bad thing" {
		t.Fatalf("CallRaw(fail) error = %v, want RPCError 'bad thing'", err)
	}
	// The connection is still usable.
	if res, err := c.CallRaw("echo"); err != nil || !bytes.Equal(res, []byte{0xD8, 0x80, 0x80}) {
		t.Fatalf("echo after error = % x, %v", []byte(res), err)
	}
}

func TestSplitResponseRejectsBadEnvelopes(t *testing.T) {
	for _, payload := range []string{
		"81 01",                          // not a map
		"A1 42 6964 01",                  // neither result nor error
		"A2 42 6964 01 45 6572726F72 01", // error without a message
		"A1 42 6964",                     // truncated
	} {
		if _, _, _, err := splitResponse(unhex(t, payload)); err == nil {
			t.Errorf("splitResponse(%s) accepted it", payload)
		}
	}
	id, res, msg, err := splitResponse(unhex(t, "A2 62 6964 05 66 726573756C74 F6"))
	if err != nil || !bytes.Equal(id, []byte{0x05}) || !bytes.Equal(res, []byte{0xF6}) || msg != nil {
		t.Errorf("text-keyed response: id %x result %x msg %x err %v", []byte(id), []byte(res), []byte(msg), err)
	}
}

func TestSplitItemAndListElements(t *testing.T) {
	item, rest, err := SplitItem(unhex(t, "82 01 02 03"))
	if err != nil || !bytes.Equal(item, []byte{0x82, 0x01, 0x02}) || !bytes.Equal(rest, []byte{0x03}) {
		t.Errorf("SplitItem = %x, %x, %v", item, rest, err)
	}
	if _, _, err := SplitItem(unhex(t, "82 01")); err == nil {
		t.Error("SplitItem accepted a truncated array")
	}
	if elems, tuple, err := ListElements(unhex(t, "9F 01 02 FF")); err != nil || tuple || len(elems) != 2 {
		t.Errorf("indefinite list: %x, %v, %v", elems, tuple, err)
	}
	if _, _, err := ListElements(unhex(t, "A0")); err == nil {
		t.Error("ListElements accepted a map")
	}
}
