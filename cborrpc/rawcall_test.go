package cborrpc

import (
	"bytes"
	"errors"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/internal/cborx"
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
		elems, ok := cborx.List(nil, res)
		if !ok || len(elems) != 3 {
			t.Fatalf("cborx.List = %x, %v", elems, ok)
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
