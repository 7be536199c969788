package cborrpc

import (
	"context"
	"errors"
)

// Delivery hooks. A handler whose reply hands something to the client
// that must be taken back if the client never gets it (get_work's leases)
// registers a hook with OnUndelivered. After such a reply the connection
// writes it out at once instead of waiting for the next read (see
// flushingReader), and runs the hooks when the write fails or the client
// has already closed the connection (it timed out waiting and hung up: a
// write to such a socket still succeeds once, so the server looks for the
// end of the client's stream before writing). A client that shuts down
// its sending side and then waits for replies is treated as gone.

// deliveryKey is the context key of a connection's hooks.
type deliveryKey struct{}

// deliveryHooks are the hooks registered by the requests of one
// connection whose replies are not yet written out. Only the connection's
// goroutine touches them.
type deliveryHooks struct {
	pending []func()
}

// OnUndelivered registers f to run if the reply to the request ctx was
// passed for cannot be delivered. It must be called from Handle, before it
// returns; f runs on the connection's goroutine, after Handle returned,
// and must bound its own work. Outside a Server's Handle call it does
// nothing.
func OnUndelivered(ctx context.Context, f func()) {
	if h, ok := ctx.Value(deliveryKey{}).(*deliveryHooks); ok {
		h.pending = append(h.pending, f)
	}
}

// errPeerClosed reports a reply not written because the client had closed
// the connection.
var errPeerClosed = errors.New("client closed the connection before the reply")

// deliver writes out the buffered replies when some carry hooks, and runs
// those hooks when that fails. It returns the failure (the connection is
// then closed).
func (c *serverConn) deliver() error {
	if len(c.hooks.pending) == 0 {
		return nil
	}
	err := peerClosed(c.nc)
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		c.undelivered()
		return err
	}
	clear(c.hooks.pending)
	c.hooks.pending = c.hooks.pending[:0]
	return nil
}

// undelivered runs the pending hooks: their replies will not be written.
func (c *serverConn) undelivered() {
	hooks := c.hooks.pending
	c.hooks.pending = nil
	if len(hooks) > 0 {
		c.srv.log.Info("cborrpc: reply not delivered; taking back what it handed out", "remote", c.remote, "replies", len(hooks))
	}
	for _, f := range hooks {
		f()
	}
}
