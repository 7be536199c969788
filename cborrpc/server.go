package cborrpc

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/internal/cborx"
	"github.com/coordinated/coordinated/internal/replyhold"
)

// ServerOptions configures a Server.
type ServerOptions struct {
	// MaxRequestSize is the largest request item accepted, in bytes; a
	// larger one closes its connection (DECISIONS §7). 0 means
	// DefaultMaxRequestSize.
	MaxRequestSize int64
	// Logger receives connection errors; nil means slog.Default().
	Logger *slog.Logger
	// Budget, when set, bounds the request bytes in flight across all
	// connections (see RequestBudget).
	Budget *RequestBudget
	// MaxConnections caps concurrent connections; one more is closed as
	// soon as it is accepted. 0 means no cap.
	MaxConnections int
	// RefusalLogInterval is how often refused connections are logged (as
	// one line with a count); 0 means DefaultRefusalLogInterval.
	RefusalLogInterval time.Duration
}

// DefaultRefusalLogInterval is how often a server logs the connections it
// refused over its connection cap.
const DefaultRefusalLogInterval = 10 * time.Second

// Server serves CBOR-RPC connections: one goroutine per connection,
// requests of a connection handled strictly in order.
type Server struct {
	handler  Handler
	limit    int64
	log      *slog.Logger
	budget   *RequestBudget
	maxConns int
	refusals refusalLog
	closing  chan struct{} // closed by Shutdown: budget waits end

	// handlerCtx is passed to every Handle call; it is cancelled only when
	// Shutdown gives up waiting.
	handlerCtx    context.Context
	cancelHandler context.CancelFunc

	mu        sync.Mutex
	shutdown  bool
	listeners map[net.Listener]struct{}
	conns     map[*serverConn]struct{}
	active    sync.WaitGroup
}

// NewServer returns a server that passes requests to h.
func NewServer(h Handler, opts ServerOptions) *Server {
	limit := opts.MaxRequestSize
	if limit <= 0 {
		limit = DefaultMaxRequestSize
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		handler:       h,
		limit:         limit,
		log:           logger,
		budget:        opts.Budget,
		maxConns:      opts.MaxConnections,
		refusals:      refusalLog{interval: cmp.Or(opts.RefusalLogInterval, DefaultRefusalLogInterval)},
		closing:       make(chan struct{}),
		handlerCtx:    ctx,
		cancelHandler: cancel,
		listeners:     make(map[net.Listener]struct{}),
		conns:         make(map[*serverConn]struct{}),
	}
}

// ErrServerClosed is returned by Serve when it is called after Shutdown.
var ErrServerClosed = errors.New("cborrpc: server closed")

// Serve accepts connections on ln until Shutdown (then it returns nil) or
// until Accept fails for good (then it returns that error). It closes ln.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isShutdown() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporaryAccept(err) {
				// Out of file descriptors and the like: wait and retry
				// instead of killing the daemon.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("cborrpc: accept failed; retrying", "error", err, "retry_in", backoff)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("cborrpc: accept: %w", err)
		}
		backoff = 0
		c, full := s.track(nc)
		if c == nil {
			if full {
				s.refusals.refused(s.log, s.maxConns) // before closing: the refused client sees the line written
			}
			nc.Close()
			continue
		}
		go c.serve()
	}
}

// isTemporaryAccept reports accept errors worth retrying (EMFILE etc.).
func isTemporaryAccept(err error) bool {
	var se *os.SyscallError
	return errors.As(err, &se) && !errors.Is(err, net.ErrClosed)
}

func (s *Server) isShutdown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutdown
}

// track registers a new connection, or returns nil during shutdown or
// (full true) when the connection cap is reached.
func (s *Server) track(nc net.Conn) (c *serverConn, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return nil, false
	}
	if s.maxConns > 0 && len(s.conns) >= s.maxConns {
		return nil, true
	}
	c = newServerConn(s, nc)
	s.conns[c] = struct{}{}
	s.active.Add(1)
	return c, false
}

// Connections returns the number of open connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Server) untrack(c *serverConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.active.Done()
}

// Shutdown stops accepting connections, lets every request already read
// (and any already buffered behind it) finish and be answered, then closes
// every connection. It returns nil when all connections are closed, or
// ctx.Err() if ctx ends first, in which case the remaining connections are
// closed forcibly and handlers' contexts are cancelled.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.shutdown {
		close(s.closing)
	}
	s.shutdown = true
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.stopReading()
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() {
		s.active.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.cancelHandler()
		return nil
	case <-ctx.Done():
		s.cancelHandler()
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

// serverConn is one client connection.
type serverConn struct {
	srv    *Server
	nc     net.Conn
	remote string
	br     *bufio.Reader
	bw     *bufio.Writer
	frames frameReader
	out    []byte // scratch for one response frame's payload, reused
	ctx    context.Context
	hooks  deliveryHooks  // delivery.go
	holds  replyhold.Hold // the current request's (held.go)
	// holding is set while heldReply waits to be written (held.go).
	holding   bool
	heldReply heldReply
}

const connBufferSize = 16 << 10

func newServerConn(s *Server, nc net.Conn) *serverConn {
	bw := bufio.NewWriterSize(nc, connBufferSize)
	br := bufio.NewReaderSize(flushingReader{r: nc, w: bw}, connBufferSize)
	c := &serverConn{
		srv:    s,
		nc:     nc,
		remote: nc.RemoteAddr().String(),
		br:     br,
		bw:     bw,
		frames: frameReader{r: br, limit: s.limit, mem: requestMemory{budget: s.budget, stop: s.closing}},
	}
	c.ctx = context.WithValue(s.handlerCtx, deliveryKey{}, &c.hooks)
	c.ctx = replyhold.With(context.WithValue(c.ctx, connKey{}, c), &c.holds)
	return c
}

// flushingReader writes out buffered responses just before the connection
// would block waiting for more request bytes. Pipelined requests that are
// already buffered are therefore answered with a single write, and a
// client waiting for its answer always gets it.
type flushingReader struct {
	r io.Reader
	w *bufio.Writer
}

func (f flushingReader) Read(p []byte) (int, error) {
	if f.w.Buffered() > 0 {
		if err := f.w.Flush(); err != nil {
			return 0, err
		}
	}
	return f.r.Read(p)
}

// stopReading makes the connection's next blocking read return at once;
// bytes already buffered are still processed. Called with srv.mu held.
func (c *serverConn) stopReading() {
	c.nc.SetReadDeadline(time.Now())
}

func (c *serverConn) serve() {
	defer c.srv.untrack(c)
	defer c.nc.Close()
	defer c.frames.mem.release()
	defer c.waitHeld() // before closing: a held reply is still owed
	for {
		item, err := c.frames.next()
		if err != nil {
			c.readFailed(err)
			c.bw.Flush()
			return
		}
		call, closeConn, err := parseTop(item, c.frames.mem.charge)
		if err != nil {
			c.readFailed(err)
			c.bw.Flush()
			return
		}
		if closeConn {
			c.bw.Flush()
			return
		}
		// The response stays buffered until the reader needs more bytes
		// (flushingReader), so a pipelined burst costs one write. A held
		// reply goes first.
		err = c.waitHeld()
		if err == nil {
			err = c.answer(&call)
		}
		c.frames.mem.release()
		if err == nil {
			err = c.deliver()
		}
		if err != nil {
			c.undelivered()
			if c.srv.handlerCtx.Err() == nil { // not a forced shutdown giving up on the held reply
				c.srv.log.Info("cborrpc: closing connection: write failed", "remote", c.remote, "error", err)
			}
			return
		}
	}
}

// readFailed logs why reading a request ended, unless it ended cleanly.
func (c *serverConn) readFailed(err error) {
	switch {
	case errors.Is(err, io.EOF):
		return
	case errors.Is(err, os.ErrDeadlineExceeded) && c.srv.isShutdown():
		return
	case errors.Is(err, net.ErrClosed):
		return
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		c.srv.log.Debug("cborrpc: connection lost", "remote", c.remote, "error", err.Error())
		return
	}
	var over *oversizeError
	var bad *cborx.MalformedError
	var broke *budgetError
	reason := "read failed"
	switch {
	case errors.As(err, &over):
		reason = "request too large"
	case errors.As(err, &broke):
		reason = "request budget exhausted"
	case errors.As(err, &bad), errors.Is(err, cborx.ErrTruncated):
		reason = "malformed request"
	}
	c.srv.log.Warn("cborrpc: closing connection: "+reason, "remote", c.remote, "error", err.Error())
}

// answer runs one call and writes its response frame to the buffer.
func (c *serverConn) answer(cl *call) error {
	payload, held, err := c.appendCall(c.out[:0], cl, true)
	if err != nil || held {
		return err
	}
	c.out = payload
	if cap(c.out) > 1<<20 {
		c.out = nil // do not pin a huge buffer to an idle connection
	}
	var hdr [11]byte
	h := cborx.AppendHead(append(hdr[:0], 0xD8, 24), cborx.MajorBytes, uint64(len(payload)))
	if _, err := c.bw.Write(h); err != nil {
		return err
	}
	_, err = c.bw.Write(payload)
	return err
}

// appendCall runs a request (or a batch, recursively, in order) and
// appends its response (or the array of responses). A top-level request's
// reply may be held instead (held true, nothing appended; held.go).
func (c *serverConn) appendCall(dst []byte, cl *call, top bool) (_ []byte, held bool, _ error) {
	if cl.batch != nil {
		dst = cborx.AppendHead(dst, cborx.MajorArray, uint64(len(cl.batch)))
		var err error
		for i := range cl.batch {
			if dst, _, err = c.appendCall(dst, &cl.batch[i], false); err != nil {
				return nil, false, err
			}
		}
		return dst, false, nil
	}
	if cl.reqErr != "" {
		return appendError(dst, cl.req.ID, cl.reqErr), false, nil
	}
	result, err, held := c.run(&cl.req, top)
	if held {
		return dst, true, nil
	}
	return c.appendOutcome(dst, cl.req.ID, cl.req.Method, result, err), false, nil
}

// appendOutcome appends the response to a request that returned result
// or err.
func (c *serverConn) appendOutcome(dst []byte, id cbor.RawMessage, method string, result any, err error) []byte {
	if err != nil {
		return appendError(dst, id, err.Error())
	}
	mark := len(dst)
	out, encErr := appendResult(dst, id, result)
	if encErr != nil {
		c.srv.log.Error("cborrpc: cannot encode result", "remote", c.remote, "method", LogValue(method), "error", encErr)
		return appendError(dst[:mark], id, "EncodeError('cannot encode result',)\n"+encErr.Error())
	}
	return out
}

// invoke calls the handler, turning a panic into an error.
func (c *serverConn) invoke(req *Request) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.srv.log.Error("cborrpc: handler panicked", "remote", c.remote, "method", LogValue(req.Method),
				"panic", LogValue(fmt.Sprint(p)), "stack", string(debug.Stack()))
			result, err = nil, fmt.Errorf("InternalError('%s',)\nhandler panicked: %v", LogValue(req.Method), p)
		}
	}()
	return c.srv.handler.Handle(c.ctx, req)
}
