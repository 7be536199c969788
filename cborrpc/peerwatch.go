package cborrpc

import (
	"context"
	"errors"
	"time"
)

// Peer watches. A handler that waits long for something other than the
// client (get_work's long poll) asks to hear when the client hangs up
// meanwhile, so it stops waiting to answer nobody. Requests of one
// connection run one at a time on its goroutine, so while the handler
// waits nothing reads the socket: the watch waits in the network poller
// for the socket to become readable, without reading, and tells the end
// of the client's stream from the bytes of a next request (a pipelining
// client is alive; its bytes stay for the connection's reader).

// connKey is the context key of the connection a request came on.
type connKey struct{}

// errCannotWatch reports a connection whose socket cannot be watched (a
// net.Pipe, another platform).
var errCannotWatch = errors.New("cborrpc: the connection's socket cannot be watched")

// PeerGone returns a channel closed when the client of the connection ctx
// was passed for closes or resets it while the request runs. stop ends
// the watch and must be called before Handle returns. The channel is never
// closed outside a Server's Handle call, where the socket cannot be
// watched, or once the client is seen sending another request.
func PeerGone(ctx context.Context) (gone <-chan struct{}, stop func()) {
	c, ok := ctx.Value(connKey{}).(*serverConn)
	if !ok {
		return nil, func() {}
	}
	closed, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if errors.Is(awaitPeerClosed(c.nc), errPeerClosed) {
			close(closed)
		}
	}()
	return closed, func() {
		// A read deadline in the past ends the poller's wait; the reader's
		// own deadline is then put back unless Shutdown set one meanwhile
		// (stopReading, under the same lock).
		c.nc.SetReadDeadline(time.Now())
		<-done
		c.srv.mu.Lock()
		if !c.srv.shutdown {
			c.nc.SetReadDeadline(time.Time{})
		}
		c.srv.mu.Unlock()
	}
}
