package cborrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordinated/coordinated/internal/cborx"
	"github.com/coordinated/coordinated/internal/replyhold"
)

// holdingHandler answers "hold" the way jobserver's update_work_unit does
// over a backend that defers its wait (internal/replyhold): it allows a
// held reply, makes a "change" whose durability the test decides through
// the await the backend defers with, and sets the reply's builder. Its
// params are a tag and flags:
//
//	"nobuild" – Reply is not called (the server answers from the outcome)
//	"ownerr"  – the handler itself returns an error
//	"sync"    – the change is durable already: await calls back at once
//
// Without flags, hold(tag) returns "own <tag>", and its builder makes
// "built <tag>" of a durable change and the error "built <tag>: <err>"
// of a failed one. Like the daemon's metrics and logging wrappers, it
// asks (replyhold.WhenAnswered) to learn the error each held reply answers, and
// sends it on built. Other methods are fakeHandler's; their names are
// sent on ran as they run.
type holdingHandler struct {
	fakeHandler
	awaits chan *pendingChange
	built  chan builtReply
	ran    chan string
}

// builtReply is what replyhold.WhenAnswered reported of a held reply.
type builtReply struct {
	tag string
	err error
}

// pendingChange is a held request's change the test has not decided yet.
type pendingChange struct {
	tag  string
	id   []byte // the request's id bytes as the handler was given them
	done func(error)
}

func newHoldingHandler() *holdingHandler {
	return &holdingHandler{awaits: make(chan *pendingChange, 16), built: make(chan builtReply, 16), ran: make(chan string, 64)}
}

func (h *holdingHandler) Handle(ctx context.Context, req *Request) (any, error) {
	if req.Method != "hold" {
		h.ran <- req.Method
		return h.fakeHandler.Handle(ctx, req)
	}
	var args []string
	for _, p := range req.Params {
		var s string
		if err := DecMode().Unmarshal(p, &s); err != nil {
			return nil, err
		}
		args = append(args, s)
	}
	if len(args) == 0 {
		return nil, errors.New("hold needs a tag")
	}
	tag, flags := args[0], args[1:]
	if !replyhold.Allow(ctx) {
		return nil, errors.New("the server offers no hold")
	}
	await := func(done func(error)) {
		if slices.Contains(flags, "sync") {
			done(nil)
			return
		}
		h.awaits <- &pendingChange{tag: tag, id: req.ID, done: done}
	}
	if !replyhold.Defer(ctx, await) {
		return nil, errors.New("the backend could not defer its wait")
	}
	if !slices.Contains(flags, "nobuild") {
		replyhold.Reply(ctx, func(err error) (any, error) {
			if err != nil {
				return nil, fmt.Errorf("built %s: %w", tag, err)
			}
			return "built " + tag, nil
		})
	}
	// Were the reply not held, f would run at once with this error, and
	// expectBuilt would report it.
	replyhold.WhenAnswered(ctx, errors.New("reply not held"), func(err error) { h.built <- builtReply{tag, err} })
	if slices.Contains(flags, "ownerr") {
		return nil, errors.New("own error " + tag)
	}
	return "own " + tag, nil
}

// expectBuilt checks that replyhold.WhenAnswered has reported tag's reply,
// answering wantErr ("" for a result): it runs when the reply is built,
// before it is written, so by the time the client has it.
func (h *holdingHandler) expectBuilt(t *testing.T, tag, wantErr string) {
	t.Helper()
	select {
	case b := <-h.built:
		switch {
		case b.tag != tag:
			t.Errorf("After reported %s's reply, want %s's", b.tag, tag)
		case wantErr == "" && b.err != nil:
			t.Errorf("After reported %s's reply answering %v, want a result", tag, b.err)
		case wantErr != "" && (b.err == nil || b.err.Error() != wantErr):
			t.Errorf("After reported %s's reply answering %v, want %q", tag, b.err, wantErr)
		}
	default:
		t.Errorf("%s's reply arrived before After was told of it", tag)
	}
}

// next returns the next change the server awaits.
func (h *holdingHandler) next(t *testing.T) *pendingChange {
	t.Helper()
	select {
	case p := <-h.awaits:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("the server never awaited the held request's change")
		return nil
	}
}

// fire completes the change with outcome, like the journal's flusher after
// a sync, and fails the test if the callback blocks: it runs on the
// goroutine that makes changes durable, which must never wait for a client.
func fire(t *testing.T, p *pendingChange, outcome error) {
	t.Helper()
	returned := make(chan struct{})
	go func() {
		p.done(outcome)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatalf("the callback for %s blocked", p.tag)
	}
}

// expectNoReply asserts that nothing has arrived on nc (read through fr)
// for a moment: what the server must not have sent yet. It cannot fail on
// a correct server however slow; a reply sent early is caught when it
// comes within the moment (it comes at once when it is written before the
// outcome is known).
func expectNoReply(t *testing.T, nc net.Conn, fr *frameReader, before string) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	defer nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, err := fr.r.Peek(1)
	if err == nil {
		t.Fatalf("a reply (% X...) arrived before %s", b, before)
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("waiting for nothing before %s: %v", before, err)
	}
}

func startHolding(t *testing.T) (*holdingHandler, *testServer) {
	t.Helper()
	h := newHoldingHandler()
	return h, serveOn(t, listenLoopback(t), h, ServerOptions{})
}

// expectReply reads the next reply and checks its id and either its result
// (wantErr empty) or its error message.
func expectReply(t *testing.T, c *Client, wantID uint64, wantRes any, wantErr string) {
	t.Helper()
	id, res, err := c.Recv()
	var rpcErr *RPCError
	switch {
	case id != wantID:
		t.Errorf("reply id %v (result %v, error %v), want %d", id, res, err, wantID)
	case wantErr == "" && (err != nil || fmt.Sprint(res) != fmt.Sprint(wantRes)):
		t.Errorf("reply %d: %v, %v; want result %v", wantID, res, err, wantRes)
	case wantErr != "" && (!errors.As(err, &rpcErr) || rpcErr.Message != wantErr):
		t.Errorf("reply %d: %v, %v; want error %q", wantID, res, err, wantErr)
	}
}

func TestHeldReplyWaitsForOutcome(t *testing.T) {
	h, ts := startHolding(t)
	c := ts.dial(t)
	lost := errors.New("IOError('journal lost',)")
	for i, tc := range []struct {
		name    string
		flags   []any
		outcome error
		res     any
		err     string
	}{
		{"builder, durable", nil, nil, "built a", ""},
		{"builder, failed", nil, lost, nil, "built a: " + lost.Error()},
		{"no builder, durable", []any{"nobuild"}, nil, "own a", ""},
		{"no builder, failed", []any{"nobuild"}, lost, nil, lost.Error()},
		{"no builder, handler's error", []any{"nobuild", "ownerr"}, nil, nil, "own error a"},
		{"builder overrides the handler's error", []any{"ownerr"}, nil, "built a", ""},
	} {
		if _, err := c.Send("hold", append([]any{"a"}, tc.flags...)...); err != nil {
			t.Fatal(err)
		}
		c.Flush()
		p := h.next(t)
		expectNoReply(t, c.nc, &c.frames, tc.name+": the change's outcome is known")
		fire(t, p, tc.outcome)
		expectReply(t, c, uint64(i+1), tc.res, tc.err)
		h.expectBuilt(t, "a", tc.err)
	}
}

func TestHeldReplyKeepsRequestOrder(t *testing.T) {
	h, ts := startHolding(t)
	c := ts.dial(t)
	c.Send("hold", "a")
	c.Send("echo", 2)
	c.Flush()
	p := h.next(t)
	// The connection reads request 2 meanwhile, but runs it only once
	// reply 1 is out: its handler has not run while the reply is held.
	expectNoReply(t, c.nc, &c.frames, "the held request's outcome is known")
	select {
	case m := <-h.ran:
		t.Fatalf("request 2 (%s) was handled while reply 1 was held", m)
	default:
	}
	fire(t, p, nil)
	expectReply(t, c, 1, "built a", "")
	expectReply(t, c, 2, "[2]", "")
	if m := <-h.ran; m != "echo" {
		t.Errorf("ran %s, want echo", m)
	}
}

func TestHeldReplyCallbackInsideAwait(t *testing.T) {
	h, ts := startHolding(t)
	c := ts.dial(t)
	// Already durable: await calls back before it returns, on the
	// connection's own goroutine.
	c.Send("hold", "a", "sync")
	c.Send("hold", "b", "sync", "nobuild")
	c.Send("echo", 3)
	c.Send("hold", "d", "sync")
	expectReply(t, c, 1, "built a", "")
	h.expectBuilt(t, "a", "")
	expectReply(t, c, 2, "own b", "")
	h.expectBuilt(t, "b", "")
	expectReply(t, c, 3, "[3]", "")
	expectReply(t, c, 4, "built d", "")
	h.expectBuilt(t, "d", "")
	if len(h.awaits) != 0 {
		t.Errorf("%d changes awaited the test", len(h.awaits))
	}
}

// splitBatchReply returns the responses in a batch's reply frame.
func splitBatchReply(t *testing.T, frame []byte) [][]byte {
	t.Helper()
	elems, head, ok := cborx.Elements(nil, frame)
	if !ok || head.Major != cborx.MajorArray {
		t.Fatalf("batch reply is not an array: % X", frame)
	}
	out := make([][]byte, len(elems))
	for i, e := range elems {
		out[i] = e
	}
	return out
}

func TestBatchWithHeldCallsAnsweredTogether(t *testing.T) {
	h, ts := startHolding(t)
	nc, fr := ts.rawConn(t)
	lost := errors.New("IOError('journal lost',)")
	var batch []byte
	batch = append(batch, 0x84)
	for i, params := range [][]any{{"a"}, {2}, {"c", "nobuild"}, {"d", "sync"}} {
		method := "hold"
		if i == 1 {
			method = "echo"
		}
		var err error
		if batch, err = appendRequest(batch, i+1, method, params); err != nil {
			t.Fatal(err)
		}
	}
	nc.Write(batch)
	// The batch's calls are answered in line, one after another: the
	// connection waits for each held call's outcome before the next.
	p := h.next(t)
	if p.tag != "a" {
		t.Fatalf("first awaited change is %s's", p.tag)
	}
	expectNoReply(t, nc, fr, "the batch's first call's outcome is known")
	fire(t, p, nil)
	p = h.next(t)
	if p.tag != "c" {
		t.Fatalf("second awaited change is %s's", p.tag)
	}
	if m := <-h.ran; m != "echo" {
		t.Fatalf("ran %s, want echo", m)
	}
	expectNoReply(t, nc, fr, "the batch's third call's outcome is known")
	fire(t, p, lost)

	frame, err := fr.next()
	if err != nil {
		t.Fatal(err)
	}
	replies := splitBatchReply(t, frame)
	want := []struct {
		res any
		msg string
	}{{"built a", ""}, {"[2]", ""}, {nil, lost.Error()}, {"built d", ""}}
	if len(replies) != len(want) {
		t.Fatalf("batch reply has %d replies, want %d: % X", len(replies), len(want), frame)
	}
	for i, r := range replies {
		id, res, msg, err := DecodeResponse(r)
		if err != nil || id != uint64(i+1) || fmt.Sprint(res) != fmt.Sprint(want[i].res) || msg != want[i].msg {
			t.Errorf("batch reply %d: id %v result %v message %q err %v; want %v %q", i+1, id, res, msg, err, want[i].res, want[i].msg)
		}
	}
	h.expectBuilt(t, "a", "")
	h.expectBuilt(t, "c", lost.Error())
	h.expectBuilt(t, "d", "")
}

func TestHeldReplyBehindBufferedRepliesAnsweredInLine(t *testing.T) {
	h, ts := startHolding(t)
	nc, fr := ts.rawConn(t)
	// One write: reply 1 is still buffered when request 2 runs, so reply
	// 2 cannot be written on its own ahead of it.
	burst := mustEncode(t, 1, "echo", 1)
	burst = append(burst, mustEncode(t, 2, "hold", "b")...)
	burst = append(burst, mustEncode(t, 3, "echo", 3)...)
	burst = append(burst, mustEncode(t, 4, "hold", "d")...)
	nc.Write(burst)
	for _, tag := range []string{"b", "d"} {
		p := h.next(t)
		if p.tag != tag {
			t.Fatalf("awaited change is %s's, want %s's", p.tag, tag)
		}
		fire(t, p, nil)
	}
	for i, want := range []string{"[1]", "built b", "[3]", "built d"} {
		frame, err := fr.next()
		if err != nil {
			t.Fatal(err)
		}
		id, res, msg, err := DecodeResponse(frame)
		if err != nil || msg != "" || id != uint64(i+1) || fmt.Sprint(res) != want {
			t.Errorf("reply %d: id %v result %v message %q err %v; want %s", i+1, id, res, msg, err, want)
		}
	}
	h.expectBuilt(t, "b", "")
	h.expectBuilt(t, "d", "")
}

func TestShutdownWaitsForHeldReply(t *testing.T) {
	h, ts := startHolding(t)
	c := ts.dial(t)
	c.Send("hold", "a")
	c.Flush()
	p := h.next(t)

	shut := ts.startShutdown(t)
	expectNoReply(t, c.nc, &c.frames, "the held request's outcome is known")
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a reply still held", err)
	default:
	}
	fire(t, p, nil)
	expectReply(t, c, 1, "built a", "")
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, _, err := c.Recv(); err == nil {
		t.Fatal("connection still open after Shutdown")
	}
}

func TestHeldReplyWrittenAfterClientStopsSending(t *testing.T) {
	h, ts := startHolding(t)
	nc, fr := ts.rawConn(t)
	nc.Write(mustEncode(t, 1, "hold", "a"))
	p := h.next(t)
	// The client has sent all it will and waits for its reply: the
	// connection sees the end of its requests while the reply is held.
	nc.(*net.TCPConn).CloseWrite()
	expectNoReply(t, nc, fr, "the held request's outcome is known")
	fire(t, p, nil)
	frame, err := fr.next()
	if err != nil {
		t.Fatal(err)
	}
	if id, res, msg, err := DecodeResponse(frame); err != nil || id != uint64(1) || res != "built a" || msg != "" {
		t.Fatalf("reply: id %v result %v message %q err %v", id, res, msg, err)
	}
	if _, err := fr.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the reply: want EOF, got %v", err)
	}
}

func TestForcedShutdownDoesNotWaitForHeldReply(t *testing.T) {
	h, ts := startHolding(t)
	c := ts.dial(t)
	c.Send("hold", "a")
	c.Send("echo", 2) // read, then waiting for reply 1 to go out
	c.Flush()
	p := h.next(t)

	ts.forceShutdown(t, c)
	// The connection's goroutine has given up the held reply and ended: a
	// second Shutdown finds nothing left to wait for.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatalf("connection goroutines still running after a forced shutdown: %v", err)
	}
	// The change becoming durable later is harmless: nothing to write to.
	fire(t, p, nil)
}

// pipeListener hands a server net.Pipe connections: conns that are not
// syscall.Conns, whose writes block until the client reads.
type pipeListener struct {
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case nc := <-l.conns:
		return nc, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func TestHeldReplyOverPipe(t *testing.T) {
	h := newHoldingHandler()
	ln := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
	serveOn(t, ln, h, ServerOptions{})
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close() })
	client.SetDeadline(time.Now().Add(20 * time.Second))
	ln.conns <- server
	c := NewClient(client)
	if _, ok := server.(syscall.Conn); ok {
		t.Fatal("net.Pipe is a syscall.Conn: this test no longer covers the fallback")
	}

	c.Send("hold", "a")
	c.Send("echo", 2)
	c.Flush()
	// Nobody reads the pipe yet, so no byte of the reply can be written:
	// the callback must return all the same.
	fire(t, h.next(t), nil)
	expectReply(t, c, 1, "built a", "")
	h.expectBuilt(t, "a", "")
	expectReply(t, c, 2, "[2]", "")
	c.Send("hold", "c", "sync")
	expectReply(t, c, 3, "built c", "")
	h.expectBuilt(t, "c", "")
}

func TestHeldReplyEchoesIDAfterRequestBytesReused(t *testing.T) {
	h, ts := startHolding(t)
	nc, fr := ts.rawConn(t)
	// Ids of different lengths, one after another through the held
	// reply's reused buffers, and a request without an id (echoed null).
	noID := unhex(t, "A2 46 6D 65 74 68 6F 64 44 68 6F 6C 64 46 70 61 72 61 6D 73 81 61 63")
	reqs := []struct {
		id    any
		tag   string
		frame []byte
	}{
		{id: "a-request-id-longer-than-the-others-0123456789", tag: "a"},
		{id: 7, tag: "b"},
		{tag: "c", frame: appendWrapped(nil, noID)},
		{id: Tuple{[]byte("batch"), 12}, tag: "d"},
		{id: uint64(1) << 40, tag: "e"},
	}
	var burst []byte
	for i := range reqs {
		if reqs[i].frame == nil {
			reqs[i].frame = mustEncode(t, reqs[i].id, "hold", reqs[i].tag)
		}
		burst = append(burst, reqs[i].frame...)
	}
	// The server reads request i+1 while reply i is held.
	nc.Write(burst)
	for _, r := range reqs {
		p := h.next(t)
		if p.tag != r.tag {
			t.Fatalf("awaited change is %s's, want %s's", p.tag, r.tag)
		}
		var wantID []byte
		if r.id != nil {
			var err error
			if wantID, err = appendValue(nil, r.id); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(p.id, wantID) {
			t.Fatalf("request %s's id is % X, want % X", r.tag, p.id, wantID)
		}
		// The request's bytes are reused before its reply is written
		// (the frame reader allocates each request afresh today; this
		// stands in for a reader that does not).
		for i := range p.id {
			p.id[i] = 0xF6
		}
		fire(t, p, nil)
		frame, err := fr.next()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := appendResult(nil, wantID, "built "+r.tag)
		if !bytes.Equal(frame, want) {
			t.Errorf("reply to %s:\n got % X\nwant % X", r.tag, frame, want)
		}
	}
}
