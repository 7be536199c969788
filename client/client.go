package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
)

// Client talks to one coordinate daemon over one TCP connection, opened on
// the first call and reopened after a failure. A call that fails because
// of the connection (refused, reset, closed) is tried again on a new
// connection up to Config.Retries times, waiting Config.BaseRetry and then
// twice as long each time, as the Python client does, with one
// difference: a request that changes the queue (add_work_units,
// update_work_unit, get_work, ...) is sent again only if it cannot have
// reached the daemon (the connection could not be opened, or was found
// closed by the daemon before anything was written). Once written, its
// reply lost, it may have been applied, and sending it again could apply
// it twice (a re-added unit runs again, a lease is stranded, an applied
// finish is reported lost): the call fails with a ConnectionError that
// wraps ErrOutcomeUnknown. Reads and settings that are the same however
// often they are applied are sent again in any case (resendable). An
// error answer from the server is never retried. Calls are serialised: a
// Client is safe for concurrent use, but its calls run one at a time.
type Client struct {
	cfg  Config
	log  *slog.Logger
	addr string

	mu     sync.Mutex
	conn   *cborrpc.Client
	nextID uint64 // like Python's _message_count: one id per call, kept across retries
}

// Option changes how New builds a Client.
type Option func(*Client)

// WithLogger sends the client's retry messages to log (default: discarded).
func WithLogger(log *slog.Logger) Option { return func(c *Client) { c.log = log } }

// New returns a client for the daemon cfg names. It does not connect yet.
func New(cfg Config, opts ...Option) (*Client, error) {
	addr, err := cfg.address()
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, addr: addr, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Dial is New with DefaultConfig(addr).
func Dial(addr string, opts ...Option) (*Client, error) {
	return New(DefaultConfig(addr), opts...)
}

// Address is the "host:port" this client talks to.
func (c *Client) Address() string { return c.addr }

// Config is the configuration the client was built from.
func (c *Client) Config() Config { return c.cfg }

// Close closes the connection; a later call reopens it.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeLocked()
}

func (c *Client) closeLocked() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}

// ServerError is an error answer from the daemon (an RPC-level failure,
// which the Python client raises as an exception).
type ServerError struct {
	Method  string
	Message string
}

func (e *ServerError) Error() string {
	// The daemons end their messages with a newline (Python's
	// "Kind('detail',)\n"); one line reads better in an error chain.
	return fmt.Sprintf("%s: the server answered with an error: %s", e.Method, strings.TrimSpace(e.Message))
}

// ErrOutcomeUnknown is wrapped by a ConnectionError for a request that
// was written to the daemon but whose reply never came: it may or may not
// have been applied, and it was not sent again.
var ErrOutcomeUnknown = errors.New("the request was sent but its reply was lost: it may have been applied, and was not sent again")

// ConnectionError is a call that could not reach the daemon, after every
// retry, or whose request was sent and its reply lost (Unsure).
type ConnectionError struct {
	Addr     string
	Method   string
	Attempts int
	Err      error
	Unsure   bool // the request reached the connection: see ErrOutcomeUnknown
}

func (e *ConnectionError) Error() string {
	if e.Unsure {
		return fmt.Sprintf("coordinate daemon at %s (%s): %v; %v", e.Addr, e.Method, ErrOutcomeUnknown, e.Err)
	}
	return fmt.Sprintf("cannot reach the coordinate daemon at %s (%s, %d attempts): %v", e.Addr, e.Method, e.Attempts, e.Err)
}

func (e *ConnectionError) Unwrap() []error {
	if e.Unsure {
		return []error{e.Err, ErrOutcomeUnknown}
	}
	return []error{e.Err}
}

// Call sends method(params...) and returns the decoded result: byte
// strings as []byte, text as string, tuples as cborrpc.Tuple, maps as
// map[any]any (byte-string keys as cbor.ByteString). Parameters are
// encoded by cborrpc: pass []byte for a Python 2 str, string for unicode,
// cborrpc.Tuple for a tuple, and Map for an options dict.
func (c *Client) Call(ctx context.Context, method string, params ...any) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	frame, err := cborrpc.EncodeRequest(c.nextID, method, params...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	delay := c.cfg.BaseRetry
	for attempt := 0; ; attempt++ {
		result, sent, err := c.roundTrip(ctx, c.nextID, frame)
		if err == nil {
			return result, nil
		}
		var rpcErr *cborrpc.RPCError
		if errors.As(err, &rpcErr) {
			return nil, &ServerError{Method: method, Message: rpcErr.Message}
		}
		c.closeLocked()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", method, context.Cause(ctx))
		}
		if !isConnectionFailure(err) {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if sent && !resendable[method] {
			return nil, &ConnectionError{Addr: c.addr, Method: method, Attempts: attempt + 1, Err: err, Unsure: true}
		}
		if attempt >= c.cfg.Retries {
			return nil, &ConnectionError{Addr: c.addr, Method: method, Attempts: attempt + 1, Err: err}
		}
		c.log.Debug("coordinate call failed, retrying", "method", method, "addr", c.addr, "attempt", attempt+1, "delay", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%s: %w", method, context.Cause(ctx))
		case <-t.C:
		}
		delay *= 2
	}
}

// roundTrip sends one encoded request on the (re)opened connection and
// reads its answer, with ctx bounding both. sent is false when nothing of
// the request can have reached the daemon.
func (c *Client) roundTrip(ctx context.Context, id uint64, frame []byte) (result any, sent bool, err error) {
	if c.conn != nil && closedByPeer(c.conn.Conn()) {
		c.closeLocked() // the daemon went away since the last call
	}
	if c.conn == nil {
		conn, err := cborrpc.DialContext(ctx, c.addr)
		if err != nil {
			return nil, false, err
		}
		c.conn = conn
	}
	nc := c.conn.Conn()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	} else {
		nc.SetDeadline(time.Time{})
	}
	// A cancellation cuts the connection's deadline short. Once the call
	// is over, wait for a callback already running, or it could cut the
	// next call's deadline instead.
	cancelled := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		nc.SetDeadline(time.Unix(1, 0))
		close(cancelled)
	})
	defer func() {
		if !stop() {
			<-cancelled
		}
	}()
	if err := c.conn.SendRaw(frame); err != nil {
		return nil, true, err
	}
	gotID, result, err := c.conn.Recv()
	if err != nil {
		return nil, true, err
	}
	if n, ok := gotID.(uint64); !ok || n != id {
		return nil, true, fmt.Errorf("response id %v does not match request id %d", gotID, id)
	}
	return result, true, nil
}

// isConnectionFailure reports errors that Python's client saw as
// socket.error: worth reconnecting and re-sending.
func isConnectionFailure(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNREFUSED)
}
