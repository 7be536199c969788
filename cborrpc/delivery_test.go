package cborrpc

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// handingHandler answers "hand" like get_work: it registers a delivery
// hook, tells the test it is running, and replies once released.
type handingHandler struct {
	entered, release chan struct{}
	undelivered      atomic.Int32
	taken            chan struct{}
}

func (h *handingHandler) Handle(ctx context.Context, req *Request) (any, error) {
	if req.Method == "hand" {
		OnUndelivered(ctx, func() {
			h.undelivered.Add(1)
			h.taken <- struct{}{}
		})
		h.entered <- struct{}{}
		<-h.release
		return "units", nil
	}
	return "pong", nil
}

func startHanding(t *testing.T) (*handingHandler, *Server, string) {
	t.Helper()
	h := &handingHandler{entered: make(chan struct{}, 1), release: make(chan struct{}, 1), taken: make(chan struct{}, 1)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(h, ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return h, srv, ln.Addr().String()
}

// waitTaken waits for the hook (bounded), failing the test if it never runs.
func (h *handingHandler) waitTaken(t *testing.T) {
	t.Helper()
	select {
	case <-h.taken:
	case <-time.After(10 * time.Second):
		t.Fatal("the delivery hook never ran for a reply the client could not get")
	}
}

func TestUndeliveredReplyRunsHook(t *testing.T) {
	for _, tc := range []struct {
		name  string
		close func(*net.TCPConn)
	}{
		{"client closed", func(c *net.TCPConn) { c.Close() }},
		{"client reset", func(c *net.TCPConn) { c.SetLinger(0); c.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, addr := startHanding(t)
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			req, err := EncodeRequest(1, "hand")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := nc.Write(req); err != nil {
				t.Fatal(err)
			}
			<-h.entered
			tc.close(nc.(*net.TCPConn)) // the client gives up waiting (on loopback the FIN or RST is there when Close returns)
			h.release <- struct{}{}
			h.waitTaken(t)
			if n := h.undelivered.Load(); n != 1 {
				t.Errorf("hook ran %d times, want 1", n)
			}
		})
	}
}

func TestDeliveredReplyKeepsHook(t *testing.T) {
	h, srv, addr := startHanding(t)
	c, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Conn().SetDeadline(time.Now().Add(20 * time.Second))
	h.release <- struct{}{}
	if res, err := c.Call("hand"); err != nil || res != "units" {
		t.Fatalf("hand = %v, %v", res, err)
	}
	if res, err := c.Call("ping"); err != nil || res != "pong" {
		t.Fatalf("ping = %v, %v", res, err)
	}
	c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil { // the connection has ended: a hook wrongly kept has run
		t.Fatal(err)
	}
	if n := h.undelivered.Load(); n != 0 {
		t.Errorf("hook ran %d times for a delivered reply", n)
	}
}
