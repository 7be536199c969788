package jobserver

import (
	"context"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
)

// diagMode renders CBOR in diagnostic notation with byte strings as 'x'
// and text strings as "x", so tests can check string kinds and tuples
// (tag 128) exactly.
var diagMode = func() cbor.DiagMode {
	dm, err := cbor.DiagOptions{ByteStringText: true}.DiagMode()
	if err != nil {
		panic(err)
	}
	return dm
}()

// diag encodes a Handle result the way the server does and renders it.
func diag(t *testing.T, v any) string {
	t.Helper()
	b, err := cborrpc.EncMode().Marshal(v)
	if err != nil {
		t.Fatalf("encoding result %#v: %v", v, err)
	}
	s, err := diagMode.Diagnose(b)
	if err != nil {
		t.Fatalf("diagnosing %x: %v", b, err)
	}
	return s
}

// request builds a request whose params are encoded with the wire encoder
// ([]byte -> byte string, string -> text, cborrpc.Tuple -> tag 128).
func request(t testing.TB, method string, params ...any) *cborrpc.Request {
	t.Helper()
	req := &cborrpc.Request{Method: method, Params: make([]cbor.RawMessage, len(params))}
	for i, p := range params {
		if raw, ok := p.(cbor.RawMessage); ok {
			req.Params[i] = raw
			continue
		}
		b, err := cborrpc.EncMode().Marshal(p)
		if err != nil {
			t.Fatalf("encoding param %d of %s: %v", i, method, err)
		}
		req.Params[i] = b
	}
	return req
}

// call runs a method that must succeed and returns its result in
// diagnostic notation.
func call(t *testing.T, js *JobServer, method string, params ...any) string {
	t.Helper()
	res, err := js.Handle(context.Background(), request(t, method, params...))
	if err != nil {
		t.Fatalf("%s: unexpected RPC error %v", method, err)
	}
	return diag(t, res)
}

// callErr runs a method that must fail at the RPC level and returns the
// error text.
func callErr(t *testing.T, js *JobServer, method string, params ...any) string {
	t.Helper()
	res, err := js.Handle(context.Background(), request(t, method, params...))
	if err == nil {
		t.Fatalf("%s: want an RPC error, got result %s", method, diag(t, res))
	}
	return err.Error()
}

// expect compares a diagnostic rendering.
func expect(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// b is shorthand for a byte string parameter.
func b(s string) []byte { return []byte(s) }

// m is shorthand for an option map with byte-string keys, as Python 2
// clients send them.
type m = map[cbor.ByteString]any

// tuple is shorthand for a tag-128 tuple.
type tuple = cborrpc.Tuple
