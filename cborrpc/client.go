package cborrpc

import (
	"bufio"
	"context"
	"fmt"
	"net"

	"github.com/coordinated/coordinated/internal/cborx"
)

// Client is a small CBOR-RPC client over one connection, for tests and the
// load generator. It numbers requests 1, 2, 3, … like the Python client.
// Call is synchronous; Send and Recv pipeline (Recv flushes pending sends).
// A Client is not safe for concurrent use.
type Client struct {
	nc     net.Conn
	bw     *bufio.Writer
	frames frameReader
	nextID uint64
	buf    []byte
}

// Dial connects to a CBOR-RPC server at addr ("host:port").
func Dial(addr string) (*Client, error) {
	return DialContext(context.Background(), addr)
}

// DialContext is Dial with a context bounding the connection attempt.
func DialContext(ctx context.Context, addr string) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cborrpc: dial %s: %w", addr, err)
	}
	return NewClient(nc), nil
}

// NewClient wraps an established connection.
func NewClient(nc net.Conn) *Client {
	br := bufio.NewReaderSize(nc, connBufferSize)
	return &Client{
		nc:     nc,
		bw:     bufio.NewWriterSize(nc, connBufferSize),
		frames: frameReader{r: br, limit: DefaultMaxRequestSize},
	}
}

// Close closes the connection.
func (c *Client) Close() error { return c.nc.Close() }

// Conn returns the underlying connection (for deadlines).
func (c *Client) Conn() net.Conn { return c.nc }

// Call sends one request and waits for its response. An error response is
// returned as *RPCError.
func (c *Client) Call(method string, params ...any) (any, error) {
	id, err := c.Send(method, params...)
	if err != nil {
		return nil, err
	}
	gotID, result, err := c.Recv()
	if err != nil {
		return nil, err
	}
	if n, ok := gotID.(uint64); !ok || n != id {
		return nil, fmt.Errorf("cborrpc: response id %v does not match request id %d", gotID, id)
	}
	return result, nil
}

// Send buffers one request and returns the id it was given. The request is
// written by the next Flush or Recv.
func (c *Client) Send(method string, params ...any) (uint64, error) {
	c.nextID++
	payload, err := appendRequest(c.buf[:0], c.nextID, method, params)
	if err != nil {
		return 0, err
	}
	c.buf = payload
	var hdr [11]byte
	if _, err := c.bw.Write(cborx.AppendHead(append(hdr[:0], 0xD8, 24), cborx.MajorBytes, uint64(len(payload)))); err != nil {
		return 0, err
	}
	if _, err := c.bw.Write(payload); err != nil {
		return 0, err
	}
	return c.nextID, nil
}

// SendRaw buffers an already encoded frame (e.g. from EncodeRequest).
func (c *Client) SendRaw(frame []byte) error {
	_, err := c.bw.Write(frame)
	return err
}

// Flush writes buffered requests.
func (c *Client) Flush() error { return c.bw.Flush() }

// Recv flushes pending requests and reads the next response. An error
// response is returned as *RPCError along with its id.
func (c *Client) Recv() (id any, result any, err error) {
	if c.bw.Buffered() > 0 {
		if err := c.bw.Flush(); err != nil {
			return nil, nil, err
		}
	}
	frame, err := c.frames.next()
	if err != nil {
		return nil, nil, fmt.Errorf("cborrpc: reading response: %w", err)
	}
	id, result, msg, err := DecodeResponse(frame)
	if err != nil {
		return id, nil, err
	}
	if msg != "" {
		return id, nil, &RPCError{Message: msg}
	}
	return id, result, nil
}

// RecvFrame flushes pending requests and returns the next response frame's
// payload (tag 24 removed) undecoded.
func (c *Client) RecvFrame() ([]byte, error) {
	if err := c.bw.Flush(); err != nil {
		return nil, err
	}
	return c.frames.next()
}
