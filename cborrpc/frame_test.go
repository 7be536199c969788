package cborrpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/internal/cborx"
)

func TestLargeRequestsBothForms(t *testing.T) {
	ts := startServer(t, ServerOptions{MaxRequestSize: 8 << 20})
	c := ts.dial(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16) // 3 MiB: several read chunks
	res, err := c.Call("echo", big)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.(Tuple)[0].([]byte); !bytes.Equal(got, big) {
		t.Fatalf("wrapped: echoed %d bytes, sent %d", len(got), len(big))
	}

	// The same request unwrapped goes through the streaming copier.
	nc, fr := ts.rawConn(t)
	bare, _ := appendRequest(nil, 9, "echo", []any{big})
	go nc.Write(bare)
	frame, err := fr.next()
	if err != nil {
		t.Fatal(err)
	}
	id, res, msg, err := DecodeResponse(frame)
	if err != nil || msg != "" || id != uint64(9) || !bytes.Equal(res.(Tuple)[0].([]byte), big) {
		t.Fatalf("bare: id %v msg %q err %v", id, msg, err)
	}
}

func TestIndefiniteLengthRequest(t *testing.T) {
	ts := startServer(t, ServerOptions{})
	nc, fr := ts.rawConn(t)
	// {_ "id": 4, "method": (_ "ec" "ho"), "params": [_ (_ h'01' h'02'), 5]}
	req := unhex(t, `BF 62 69 64 04 66 6D 65 74 68 6F 64 7F 62 65 63 62 68 6F FF
		66 70 61 72 61 6D 73 9F 5F 41 01 41 02 FF 05 FF FF`)
	for _, frame := range [][]byte{req, appendWrapped(nil, req)} {
		nc.Write(frame)
		got, err := fr.next()
		if err != nil {
			t.Fatal(err)
		}
		// Params are echoed as received, indefinite encoding included.
		want := unhex(t, "A2 42 69 64 04 46 72 65 73 75 6C 74 D8 80 82 5F 41 01 41 02 FF 05")
		if !bytes.Equal(got, want) {
			t.Errorf("got % X\nwant % X", got, want)
		}
	}
}

// retainingHandler keeps the raw params of every request it sees.
type retainingHandler struct {
	mu   sync.Mutex
	kept []cbor.RawMessage
}

func (h *retainingHandler) Handle(_ context.Context, req *Request) (any, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kept = append(h.kept, req.Params...)
	return nil, nil
}

// TestHandlersMayRetainRawParams checks the promise of the package doc:
// the raw slices of a request are never overwritten by later requests.
func TestHandlersMayRetainRawParams(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &retainingHandler{}
	srv := NewServer(h, ServerOptions{})
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	c, err := Dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 300
	for i := 0; i < n; i++ { // pipelined, so several share one read buffer
		if _, err := c.Send("keep", bytes.Repeat([]byte{byte(i)}, 40)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		if _, _, err := c.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, raw := range h.kept {
		want := append([]byte{0x58, 40}, bytes.Repeat([]byte{byte(i)}, 40)...)
		if !bytes.Equal(raw, want) {
			t.Fatalf("request %d's param changed to % X", i, []byte(raw))
		}
	}
}

func TestFrameReaderErrors(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  error
	}{
		{"empty stream", "", io.EOF},
		{"wrapped head cut", "D8 18 58", cborx.ErrTruncated},
		{"wrapped body cut", "D8 18 43 A1 01", cborx.ErrTruncated},
		{"bare map cut", "A2 01", cborx.ErrTruncated},
		{"indefinite wrapped string with bad chunk", "D8 18 5F 61 61 FF", errMalformed},
		{"oversized indefinite wrapped", "D8 18 5F 5A 00 01 00 00", errOversize},
	}
	for _, tc := range cases {
		fr := frameReader{r: bufioReader(unhex(t, tc.input)), limit: 1024}
		_, err := fr.next()
		if !matchesKind(err, tc.want) {
			t.Errorf("%s: got %v, want kind %v", tc.name, err, tc.want)
		}
	}
}

var (
	errMalformed = errors.New("malformed")
	errOversize  = errors.New("oversize")
)

func matchesKind(err, kind error) bool {
	var bad *cborx.MalformedError
	var over *oversizeError
	switch kind {
	case errMalformed:
		return errors.As(err, &bad)
	case errOversize:
		return errors.As(err, &over)
	}
	return errors.Is(err, kind)
}

// Tag 24 is the same tag whatever encoding its head takes; decoders
// (Python's cbor included) accept the longer ones. A request wrapped in
// any of them gets the reply the usual 0xD8 0x18 gets (it closed the
// connection after unwrapping nothing 257 times).
func TestTag24AnyHeadEncoding(t *testing.T) {
	ts := startServer(t, ServerOptions{})
	nc, fr := ts.rawConn(t)
	req := unhex(t, "A3 62 69 64 07 66 6D 65 74 68 6F 64 64 65 63 68 6F 66 70 61 72 61 6D 73 81 01")
	short := appendWrapped(nil, req)
	if short[0] != 0xD8 || short[1] != cborx.TagEmbedded {
		t.Fatalf("appendWrapped: % X", short[:2])
	}
	var want []byte
	for _, head := range [][]byte{{0xD8, 0x18}, {0xD9, 0x00, 0x18}, {0xDA, 0, 0, 0, 0x18}, {0xDB, 0, 0, 0, 0, 0, 0, 0, 0x18}} {
		frame := append(append([]byte(nil), head...), short[2:]...)
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		got, err := fr.next()
		if err != nil {
			t.Fatalf("head % X: %v\nlog: %s", head, err, ts.logs.String())
		}
		if want == nil {
			want = got
			if id, res, msg, err := DecodeResponse(got); err != nil || msg != "" || id != uint64(7) || res == nil {
				t.Fatalf("reply % X: id %v res %v msg %q err %v", got, id, res, msg, err)
			}
		} else if !bytes.Equal(got, want) {
			t.Errorf("head % X: reply % X, want % X", head, got, want)
		}
	}
}
