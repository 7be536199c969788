package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/internal/replyhold"
)

// loggingListener logs one line when a connection opens and one when it
// closes, at debug level (connection churn is high with fork workers).
type loggingListener struct {
	net.Listener
	log  *slog.Logger
	open atomic.Int64
}

func (l *loggingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.open.Add(1)
	l.log.Debug("connection opened", "remote", c.RemoteAddr().String(), "open", n)
	return &loggingConn{Conn: c, l: l}, nil
}

type loggingConn struct {
	net.Conn
	l    *loggingListener
	once sync.Once
}

// SyscallConn reaches the socket under the wrapper: the CBOR-RPC server
// looks at it without blocking (a client that hung up before its get_work
// reply, a held reply written by the journal's flusher).
func (c *loggingConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errNoSocket
	}
	return sc.SyscallConn()
}

var errNoSocket = errors.New("connection has no socket")

func (c *loggingConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		n := c.l.open.Add(-1)
		c.l.log.Debug("connection closed", "remote", c.RemoteAddr().String(), "open", n)
	})
	return err
}

// loggingHandler logs every request that fails at the RPC level (bad
// parameters, unknown methods, backend failures). In-band (false, msg)
// answers are normal results and are not logged.
type loggingHandler struct {
	h   cborrpc.Handler
	log *slog.Logger
}

func (l loggingHandler) Handle(ctx context.Context, req *cborrpc.Request) (any, error) {
	res, err := l.h.Handle(ctx, req)
	// A held reply (internal/replyhold) is built when its change is
	// durable; its error is known only then.
	replyhold.WhenAnswered(ctx, err, func(err error) { l.failed(req.Method, err) })
	return res, err
}

// failed logs a request answered with err, if err is not nil.
func (l loggingHandler) failed(method string, err error) {
	if err != nil {
		l.log.Info("request failed", "method", cborrpc.LogValue(method),
			"error", cborrpc.LogValue(strings.TrimRight(err.Error(), "\n")))
	}
}
