package cborrpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// fakeHandler implements a few test methods:
//
//	echo(args...)  → Tuple of the raw params
//	named(**kw)    → the sorted names of the keyword params
//	fail(msg)      → error response with msg
//	boom()         → panics
//	block()        → signals entered, waits for release
type fakeHandler struct {
	entered chan struct{}
	release chan struct{}
	// panicOnUnknown makes an unknown method panic with its name.
	panicOnUnknown bool
}

func (h *fakeHandler) Handle(ctx context.Context, req *Request) (any, error) {
	switch req.Method {
	case "echo":
		out := make(Tuple, len(req.Params))
		for i, p := range req.Params {
			out[i] = p
		}
		return out, nil
	case "named":
		m := make(map[cbor.ByteString]any, len(req.NamedParams))
		for k, v := range req.NamedParams {
			m[cbor.ByteString(k)] = v
		}
		return m, nil
	case "fail":
		var msg string
		if len(req.Params) > 0 {
			_ = DecMode().Unmarshal(req.Params[0], &msg)
		}
		return nil, errors.New(msg)
	case "boom":
		panic("kaboom")
	case "corrupt":
		return Tuple{cbor.RawMessage{0xA1, 0x41}}, nil
	case "block":
		h.entered <- struct{}{}
		select {
		case <-h.release:
			return "released", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if h.panicOnUnknown {
		panic("no such method " + req.Method)
	}
	return nil, fmt.Errorf("AttributeError(%q,)", req.Method)
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type testServer struct {
	srv    *Server
	addr   string
	logs   *syncBuffer
	h      *fakeHandler
	served chan error
}

func startServer(t testing.TB, opts ServerOptions) *testServer {
	t.Helper()
	h := &fakeHandler{entered: make(chan struct{}, 16), release: make(chan struct{})}
	ts := serveOn(t, listenLoopback(t), h, opts)
	ts.h = h
	return ts
}

func listenLoopback(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// serveOn serves ln with a server passing requests to h, logging to
// ts.logs; the server is shut down when the test ends.
func serveOn(t testing.TB, ln net.Listener, h Handler, opts ServerOptions) *testServer {
	t.Helper()
	ts := &testServer{
		logs:   &syncBuffer{},
		addr:   ln.Addr().String(),
		served: make(chan error, 1),
	}
	opts.Logger = slog.New(slog.NewTextHandler(ts.logs, nil))
	ts.srv = NewServer(h, opts)
	go func() { ts.served <- ts.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ts.srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return ts
}

func (ts *testServer) dial(t testing.TB) *Client {
	t.Helper()
	c, err := Dial(ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Conn().SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

// rawConn opens a plain TCP connection for hand-written frames.
func (ts *testServer) rawConn(t *testing.T) (net.Conn, *frameReader) {
	t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return nc, &frameReader{r: bufio.NewReader(nc), limit: DefaultMaxRequestSize}
}

// expectClosed asserts the server closes the connection without replying.
func expectClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	buf := make([]byte, 64)
	n, err := nc.Read(buf)
	if err == nil {
		t.Fatalf("expected the server to close the connection, got %d bytes % X", n, buf[:n])
	}
	if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("expected EOF, got %v", err)
	}
}

func mustEncode(t *testing.T, id any, method string, params ...any) []byte {
	t.Helper()
	b, err := EncodeRequest(id, method, params...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCallEchoAndErrors(t *testing.T) {
	ts := startServer(t, ServerOptions{})
	c := ts.dial(t)

	res, err := c.Call("echo", []byte("ws1"), "kü", 7.5, Tuple{1, 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Tuple{[]byte("ws1"), "kü", 7.5, Tuple{uint64(1), uint64(3)}, nil}
	if fmt.Sprintf("%#v", res) != fmt.Sprintf("%#v", want) {
		t.Errorf("echo = %#v, want %#v", res, want)
	}

	_, err = c.Call("fail", "KeyError('name',)\n")
	var rpcErr *RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Message != "KeyError('name',)\n" {
		t.Errorf("fail: got %v", err)
	}

	_, err = c.Call("boom")
	if !errors.As(err, &rpcErr) || !strings.Contains(rpcErr.Message, "kaboom") {
		t.Errorf("boom: got %v", err)
	}
	if !strings.Contains(ts.logs.String(), "handler panicked") {
		t.Errorf("no log line for the panic: %s", ts.logs.String())
	}
	_, err = c.Call("corrupt")
	if !errors.As(err, &rpcErr) || !strings.Contains(rpcErr.Message, "not one valid item") {
		t.Errorf("corrupt result: got %v", err)
	}
	// The connection survives the panic and the bad result.
	if res, err := c.Call("echo", 1); err != nil || fmt.Sprint(res) != "[1]" {
		t.Errorf("echo after panic: %v %v", res, err)
	}
}

func TestEnvelopeVariants(t *testing.T) {
	ts := startServer(t, ServerOptions{})
	nc, fr := ts.rawConn(t)
	cases := []struct {
		name    string
		payload string // request map, hex
		want    string // response payload, hex
	}{
		{"text keys and method", "A3 62 69 64 02 66 6D 65 74 68 6F 64 64 65 63 68 6F 66 70 61 72 61 6D 73 81 01",
			"A2 42 69 64 02 46 72 65 73 75 6C 74 D8 80 81 01"},
		{"no id echoes null", "A2 46 6D 65 74 68 6F 64 44 65 63 68 6F 46 70 61 72 61 6D 73 80",
			"A2 42 69 64 F6 46 72 65 73 75 6C 74 D8 80 80"},
		{"id echoed verbatim (text, tuple)", "A3 42 69 64 D8 80 82 61 61 F5 46 6D 65 74 68 6F 64 44 65 63 68 6F 46 70 61 72 61 6D 73 80",
			"A2 42 69 64 D8 80 82 61 61 F5 46 72 65 73 75 6C 74 D8 80 80"},
		{"params absent", "A2 42 69 64 01 46 6D 65 74 68 6F 64 44 65 63 68 6F",
			"A2 42 69 64 01 46 72 65 73 75 6C 74 D8 80 80"},
		{"params tuple", "A3 42 69 64 01 46 6D 65 74 68 6F 64 44 65 63 68 6F 46 70 61 72 61 6D 73 D8 80 81 05",
			"A2 42 69 64 01 46 72 65 73 75 6C 74 D8 80 81 05"},
		{"named params", "A3 42 69 64 01 46 6D 65 74 68 6F 64 45 6E 61 6D 65 64 46 70 61 72 61 6D 73 A1 61 6B 02",
			"A2 42 69 64 01 46 72 65 73 75 6C 74 A1 41 6B 02"},
		{"extra keys ignored", "A4 42 69 64 01 41 78 02 46 6D 65 74 68 6F 64 44 65 63 68 6F 46 70 61 72 61 6D 73 80",
			"A2 42 69 64 01 46 72 65 73 75 6C 74 D8 80 80"},
	}
	for _, tc := range cases {
		nc.Write(appendWrapped(nil, unhex(t, tc.payload)))
		got, err := fr.next()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if want := unhex(t, tc.want); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got % X\nwant % X", tc.name, got, want)
		}
	}

	errCases := []struct {
		name, payload, wantPrefix string
	}{
		{"missing method", "A2 42 69 64 01 46 70 61 72 61 6D 73 80", "KeyError('method',)"},
		{"params not a container", "A3 42 69 64 01 46 6D 65 74 68 6F 64 44 65 63 68 6F 46 70 61 72 61 6D 73 05", "don't understand params: 5"},
		{"unknown method", "A3 42 69 64 01 46 6D 65 74 68 6F 64 43 6E 6F 70 46 70 61 72 61 6D 73 80", "AttributeError"},
	}
	for _, tc := range errCases {
		nc.Write(appendWrapped(nil, unhex(t, tc.payload)))
		got, err := fr.next()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		id, _, msg, err := DecodeResponse(got)
		if err != nil || id != uint64(1) || !strings.HasPrefix(msg, tc.wantPrefix) {
			t.Errorf("%s: id %v msg %q err %v", tc.name, id, msg, err)
		}
	}
}

func TestPipelinedRepliesInOrder(t *testing.T) {
	ts := startServer(t, ServerOptions{})
	nc, fr := ts.rawConn(t)
	const n = 500
	var burst []byte
	for i := 1; i <= n; i++ {
		burst = append(burst, mustEncode(t, i, "echo", i)...)
	}
	go nc.Write(burst) // one write holding every request
	for i := 1; i <= n; i++ {
		frame, err := fr.next()
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		id, res, msg, err := DecodeResponse(frame)
		if err != nil || msg != "" || id != uint64(i) || fmt.Sprint(res) != fmt.Sprintf("[%d]", i) {
			t.Fatalf("response %d: id %v result %v msg %q err %v", i, id, res, msg, err)
		}
	}
}

func TestClientSendRecvPipelining(t *testing.T) {
	ts := startServer(t, ServerOptions{})
	c := ts.dial(t)
	var ids []uint64
	for i := 0; i < 50; i++ {
		id, err := c.Send("echo", i)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i, want := range ids {
		id, res, err := c.Recv()
		if err != nil || id != want || fmt.Sprint(res) != fmt.Sprintf("[%d]", i) {
			t.Fatalf("recv %d: id %v res %v err %v", i, id, res, err)
		}
	}
}

func TestBatchesAndBareRequests(t *testing.T) {
	ts := startServer(t, ServerOptions{})
	nc, fr := ts.rawConn(t)

	bare := unhex(t, "A3 42 69 64 01 46 6D 65 74 68 6F 64 44 65 63 68 6F 46 70 61 72 61 6D 73 81 01")
	nc.Write(bare)
	got, err := fr.next()
	if err != nil {
		t.Fatal(err)
	}
	if want := unhex(t, "A2 42 69 64 01 46 72 65 73 75 6C 74 D8 80 81 01"); !bytes.Equal(got, want) {
		t.Errorf("bare request: got % X want % X", got, want)
	}

	// [wrapped id 2, bare id 3, [bare id 4]] → one frame [r2, r3, [r4]].
	wrapped2 := mustEncode(t, 2, "echo", 2)
	bare3, _ := appendRequest(nil, 3, "echo", []any{3})
	bare4, _ := appendRequest(nil, 4, "echo", []any{4})
	batch := append([]byte{0x83}, wrapped2...)
	batch = append(batch, bare3...)
	batch = append(batch, 0x81)
	batch = append(batch, bare4...)
	for _, frame := range [][]byte{batch, appendWrapped(nil, batch)} {
		nc.Write(frame)
		got, err = fr.next()
		if err != nil {
			t.Fatal(err)
		}
		r2, _ := appendResult(nil, []byte{2}, Tuple{2})
		r3, _ := appendResult(nil, []byte{3}, Tuple{3})
		r4, _ := appendResult(nil, []byte{4}, Tuple{4})
		want := append(append(append(append([]byte{0x83}, r2...), r3...), 0x81), r4...)
		if !bytes.Equal(got, want) {
			t.Errorf("batch: got % X want % X", got, want)
		}
	}

	// An empty batch gets an empty array.
	nc.Write([]byte{0x80})
	if got, err = fr.next(); err != nil || !bytes.Equal(got, []byte{0x80}) {
		t.Errorf("empty batch: % X %v", got, err)
	}
}

func TestNullAndEOFClose(t *testing.T) {
	ts := startServer(t, ServerOptions{})
	nc, fr := ts.rawConn(t)
	// A request then null in one write: the request is answered, then the
	// server closes.
	nc.Write(append(mustEncode(t, 1, "echo"), 0xF6))
	if _, err := fr.next(); err != nil {
		t.Fatal(err)
	}
	if _, err := fr.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after null: want EOF, got %v", err)
	}

	// Wrapped null also closes.
	nc2, _ := ts.rawConn(t)
	nc2.Write([]byte{0xD8, 0x18, 0x41, 0xF6})
	expectClosed(t, nc2)

	// Clean EOF from the client: nothing logged.
	nc3, _ := ts.rawConn(t)
	nc3.Close()
	c := ts.dial(t)
	if _, err := c.Call("echo"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ts.logs.String(), "closing connection") {
		t.Errorf("clean closes were logged: %s", ts.logs.String())
	}
}

func TestMalformedInputClosesOnlyThatConnection(t *testing.T) {
	deep := bytes.Repeat([]byte{0x81}, MaxNestingDepth+10)
	deep = append(deep, 0x01)
	cases := []struct {
		name    string
		input   []byte
		halfEOF bool // close the write side after sending (truncation)
		logWant string
	}{
		{"truncated wrapped", unhex(t, "D8 18 58 25 A3 42 69"), true, "truncated"},
		{"truncated bare", unhex(t, "A3 42 69 64"), true, "truncated"},
		{"unknown tag", unhex(t, "C1 1A 00 00 00 00"), false, "unsupported CBOR tag 1"},
		{"unknown tag inside data", appendWrapped(nil, unhex(t, "A3 42 69 64 01 46 6D 65 74 68 6F 64 44 65 63 68 6F 46 70 61 72 61 6D 73 81 D8 64 01")), false, "unsupported CBOR tag 100"},
		{"integer top level", []byte{0x05}, false, "not a request"},
		{"text top level", unhex(t, "D8 18 42 61 61"), false, "not a request"},
		{"garbage inside the envelope", unhex(t, "D8 18 43 A1 01 FF"), false, "unexpected break byte"},
		{"trailing bytes in envelope", unhex(t, "D8 18 42 A0 A0"), false, "after"},
		{"tag 24 around non-bytes", unhex(t, "D8 18 A0"), false, "byte string"},
		{"reserved info", []byte{0x1C}, false, "reserved"},
		{"too deep", deep, false, "nesting deeper"},
		{"bad utf-8", unhex(t, "D8 18 43 61 FF 00"), false, "UTF-8"},
		{"oversized wrapped", unhex(t, "D8 18 5A 00 00 10 00"), false, "request of 4096 bytes exceeds limit 1024"},
		{"oversized bare", append(unhex(t, "A1 41 61 5A 00 00 10 00"), make([]byte, 64)...), false, "exceeds limit 1024"},
	}
	ts := startServer(t, ServerOptions{MaxRequestSize: 1024})
	other := ts.dial(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc, _ := ts.rawConn(t)
			nc.Write(tc.input)
			if tc.halfEOF {
				nc.(*net.TCPConn).CloseWrite()
			}
			expectClosed(t, nc)
			if _, err := other.Call("echo", 1); err != nil {
				t.Fatalf("other connection broken: %v", err)
			}
			// The log line names this connection and the reason.
			remote := "remote=" + nc.LocalAddr().String() + " "
			waitFor(t, func() bool {
				for _, line := range strings.Split(ts.logs.String(), "\n") {
					if strings.Contains(line, remote) && strings.Contains(line, tc.logWant) {
						return true
					}
				}
				return false
			}, "log line for %s containing %q; logs:\n%s", remote, tc.logWant, ts.logs)
		})
	}
}

// waitFor polls cond (log lines are written just after the close).
func waitFor(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for "+format, args...)
}

// startShutdown starts ts's Shutdown and waits until its listener is
// closed (new connections are refused); Shutdown's result comes on the
// channel returned.
func (ts *testServer) startShutdown(t *testing.T) <-chan error {
	t.Helper()
	shut := make(chan error, 1)
	go func() { shut <- ts.srv.Shutdown(context.Background()) }()
	waitFor(t, func() bool {
		nc, err := net.Dial("tcp", ts.addr)
		if err == nil {
			nc.Close()
		}
		return err != nil
	}, "listener to close")
	return shut
}

func TestShutdownAnswersInFlightRequests(t *testing.T) {
	ts := startServer(t, ServerOptions{})
	c := ts.dial(t)
	idle := ts.dial(t)
	if _, err := idle.Call("echo"); err != nil {
		t.Fatal(err)
	}
	// One request being handled and one pipelined behind it.
	if _, err := c.Send("block"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send("echo", 2); err != nil {
		t.Fatal(err)
	}
	c.Flush()
	<-ts.h.entered

	shut := ts.startShutdown(t)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v before the in-flight request finished", err)
	default:
	}
	close(ts.h.release)

	_, res, err := c.Recv()
	if err != nil || res != "released" {
		t.Fatalf("in-flight request: %v %v", res, err)
	}
	_, res, err = c.Recv()
	if err != nil || fmt.Sprint(res) != "[2]" {
		t.Fatalf("buffered request: %v %v", res, err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-ts.served; err != nil {
		t.Fatalf("Serve returned %v after Shutdown", err)
	}
	if _, _, err := idle.Recv(); err == nil {
		t.Fatal("idle connection still open after Shutdown")
	}
}

func TestShutdownGivesUpWhenContextEnds(t *testing.T) {
	ts := startServer(t, ServerOptions{})
	c := ts.dial(t)
	if _, err := c.Send("block"); err != nil {
		t.Fatal(err)
	}
	c.Flush()
	<-ts.h.entered
	// The handler sees its context cancelled and the connection is gone.
	ts.forceShutdown(t, c)
}

// forceShutdown shuts ts down with a context that has already ended and
// checks that c's connection is closed.
func (ts *testServer) forceShutdown(t *testing.T, c *Client) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ts.srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown with cancelled ctx = %v", err)
	}
	if _, _, err := c.Recv(); err == nil {
		t.Fatal("connection survived a forced shutdown")
	}
}

func TestThousandConcurrentConnections(t *testing.T) {
	ts := startServer(t, ServerOptions{})
	const conns, calls = 1000, 3
	clients := make([]*Client, conns)
	for i := range clients {
		clients[i] = ts.dial(t)
	}
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < calls; j++ {
				res, err := c.Call("echo", i, j)
				if err != nil {
					errs <- err
					return
				}
				if got := fmt.Sprint(res); got != fmt.Sprintf("[%d %d]", i, j) {
					errs <- fmt.Errorf("conn %d call %d: got %s", i, j, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// countingListener counts the Write calls made on accepted connections.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: nc, writes: l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

func TestPipelinedBurstIsAnsweredWithFewWrites(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	srv := NewServer(&fakeHandler{}, ServerOptions{})
	go srv.Serve(countingListener{Listener: ln, writes: &writes})
	defer srv.Shutdown(context.Background())

	c, err := Dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 100
	for i := 0; i < n; i++ {
		if _, err := c.Send("echo", i); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ { // the first Recv sends the whole burst at once
		if _, res, err := c.Recv(); err != nil || fmt.Sprint(res) != fmt.Sprintf("[%d]", i) {
			t.Fatalf("response %d: %v %v", i, res, err)
		}
	}
	// 100 responses of ~20 bytes fit in one buffer: one write per read
	// burst, not one per response.
	t.Logf("%d responses took %d writes", n, writes.Load())
	if got := writes.Load(); got > 10 {
		t.Errorf("%d responses took %d writes", n, got)
	}
}
