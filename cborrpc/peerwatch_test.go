package cborrpc

import (
	"context"
	"testing"
	"time"
)

// watchHandler's "watch" waits, watching its client, until the client
// hangs up (answering "gone", which nobody reads) or release.
type watchHandler struct {
	entered chan struct{}
	release chan struct{}
	gone    chan struct{}
}

func newWatchServer(t *testing.T) (*testServer, *watchHandler) {
	h := &watchHandler{entered: make(chan struct{}, 4), release: make(chan struct{}, 4), gone: make(chan struct{}, 4)}
	return serveOn(t, listenLoopback(t), h, ServerOptions{}), h
}

func (h *watchHandler) Handle(ctx context.Context, req *Request) (any, error) {
	if req.Method != "watch" {
		return "echo", nil
	}
	gone, stop := PeerGone(ctx)
	defer stop()
	h.entered <- struct{}{}
	select {
	case <-gone:
		h.gone <- struct{}{}
		return "gone", nil
	case <-h.release:
		return "released", nil
	}
}

// within fails the test unless ch delivers before a generous bound (the
// bound only keeps a broken build from hanging the test).
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestPeerGoneWhenClientHangsUp(t *testing.T) {
	ts, h := newWatchServer(t)
	nc, _ := ts.rawConn(t)
	if _, err := nc.Write(mustEncode(t, 1, "watch")); err != nil {
		t.Fatal(err)
	}
	within(t, h.entered, "the request to start")
	nc.Close()
	within(t, h.gone, "the handler to hear the client hung up")
	waitFor(t, func() bool { return ts.srv.Connections() == 0 }, "the connection to close")
}

// A client pipelining its next request is alive: the watch ends without
// firing, leaves the bytes for the reader, and the connection goes on
// reading (its read deadline put back).
func TestPeerWatchLeavesConnectionUsable(t *testing.T) {
	ts, h := newWatchServer(t)
	c := ts.dial(t)
	if _, err := c.Send("watch"); err != nil {
		t.Fatal(err)
	}
	c.Flush()
	within(t, h.entered, "the request to start")
	if _, err := c.Send("echo"); err != nil {
		t.Fatal(err)
	}
	c.Flush()
	time.Sleep(50 * time.Millisecond) // let the watch see the bytes (it must not fire)
	h.release <- struct{}{}
	for _, want := range []string{"released", "echo"} {
		if _, res, err := c.Recv(); err != nil || res != want {
			t.Fatalf("got %v, %v; want %q", res, err, want)
		}
	}
	// A watch that ends with nothing sent, then a pause: the next request
	// is still read.
	if _, err := c.Send("watch"); err != nil {
		t.Fatal(err)
	}
	c.Flush()
	within(t, h.entered, "the second request to start")
	h.release <- struct{}{}
	if _, res, err := c.Recv(); err != nil || res != "released" {
		t.Fatalf("got %v, %v", res, err)
	}
	time.Sleep(20 * time.Millisecond)
	if res, err := c.Call("echo"); err != nil || res != "echo" {
		t.Fatalf("after the watch: %v, %v", res, err)
	}
	select {
	case <-h.gone:
		t.Fatal("the watch fired for a live client")
	default:
	}
}

// Shutdown during a watch still answers the request, then closes.
func TestShutdownDuringPeerWatch(t *testing.T) {
	ts, h := newWatchServer(t)
	c := ts.dial(t)
	if _, err := c.Send("watch"); err != nil {
		t.Fatal(err)
	}
	c.Flush()
	within(t, h.entered, "the request to start")
	shut := ts.startShutdown(t)
	h.release <- struct{}{}
	if _, res, err := c.Recv(); err != nil || res != "released" {
		t.Fatalf("got %v, %v", res, err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// Outside a server's Handle call nothing is watched.
func TestPeerGoneOutsideServer(t *testing.T) {
	gone, stop := PeerGone(context.Background())
	stop()
	if gone != nil {
		t.Fatal("a channel for no connection")
	}
}
