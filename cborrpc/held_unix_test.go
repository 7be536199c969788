//go:build unix

package cborrpc

import (
	"bytes"
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordinated/coordinated/internal/replyhold"
)

// bigReplyHandler holds "big"'s reply, a byte string of size bytes.
type bigReplyHandler struct {
	*holdingHandler
	size int
}

func (h bigReplyHandler) Handle(ctx context.Context, req *Request) (any, error) {
	if req.Method != "big" {
		return h.holdingHandler.Handle(ctx, req)
	}
	replyhold.Allow(ctx)
	replyhold.Defer(ctx, func(done func(error)) {
		h.awaits <- &pendingChange{tag: "big", id: req.ID, done: done}
	})
	replyhold.Reply(ctx, func(error) (any, error) { return bytes.Repeat([]byte{'x'}, h.size), nil })
	return nil, nil
}

// clientReceiveBuffer is the receive buffer the client of
// TestHeldReplyToClientNotReading asks for (which also stops Linux from
// growing it).
const clientReceiveBuffer = 4 << 10

// moreThanSocketsHold is a reply size the server's send buffer and the
// client's receive buffer cannot take together: twice the most Linux lets
// a TCP send buffer grow to, or 16 MiB where that cannot be read.
func moreThanSocketsHold() int {
	size := 16 << 20
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem")
	if f := strings.Fields(string(b)); err == nil && len(f) == 3 {
		if most, err := strconv.Atoi(f[2]); err == nil {
			size = max(size, 2*most+4*clientReceiveBuffer)
		}
	}
	return size
}

func TestHeldReplyToClientNotReading(t *testing.T) {
	size := moreThanSocketsHold()
	h := bigReplyHandler{holdingHandler: newHoldingHandler(), size: size}
	ts := serveOn(t, listenLoopback(t), h, ServerOptions{})
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, clientReceiveBuffer)
		}); err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	c := NewClient(nc)

	c.Send("big")
	c.Send("echo", 2)
	c.Flush()
	// The client reads nothing until the callback has returned: the
	// socket takes part of the reply, and the rest must wait for the
	// client without holding up the callback.
	fire(t, h.next(t), nil)
	_, res, err := c.Recv()
	if b, ok := res.([]byte); err != nil || !ok || len(b) != size || bytes.Count(b, []byte{'x'}) != size {
		t.Fatalf("big reply: %d bytes, %v", len(b), err)
	}
	expectReply(t, c, 2, "[2]", "")
}
