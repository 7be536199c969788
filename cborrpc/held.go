package cborrpc

import (
	"context"

	"github.com/coordinated/coordinated/internal/replyhold"
)

// Held replies (internal/replyhold). A handler may let the backend return
// before its change is durable; the reply is then built and written by
// the goroutine that made the change durable (the journal's flusher, say),
// so the connection's goroutine is not put to sleep and woken once per
// request. The connection goes on reading meanwhile; before it answers
// anything else it waits for the held reply to be out, so replies keep
// the order of their requests. A batch's replies go out together, so a
// request in a batch waits for its outcome on the connection's goroutine.

// heldReply is the one reply a connection may have held. Its buffers are
// reused: the connection's goroutine touches them only when no reply is
// held (holding false, or after waitHeld).
type heldReply struct {
	id      []byte // the request's id, copied out of the request's bytes
	method  string
	result  any
	err     error
	held    replyhold.Held
	payload []byte
	frame   []byte
	done    chan error // the write's outcome; capacity 1
}

// run invokes the handler for req. If the backend deferred its wait, the
// reply is held (isHeld true: writeHeld will write it) when mayHold and
// nothing is buffered before it and it hands nothing out that must be
// taken back if undelivered (delivery.go); otherwise the outcome is
// awaited here, as for a batch.
func (c *serverConn) run(req *Request, mayHold bool) (result any, err error, isHeld bool) {
	result, err = c.invoke(req)
	held := c.holds.Take()
	if held.Await == nil {
		return result, err, false
	}
	if !mayHold || c.bw.Buffered() > 0 || len(c.hooks.pending) > 0 {
		result, err = waitOutcome(c.srv.handlerCtx, &held, result, err)
		return result, err, false
	}
	h := &c.heldReply
	h.id = append(h.id[:0], req.ID...)
	if req.ID == nil {
		h.id = nil
	}
	h.method, h.result, h.err, h.held = req.Method, result, err, held
	if h.done == nil {
		h.done = make(chan error, 1)
	}
	c.holding = true
	held.Await(c.writeHeld)
	return nil, nil, true
}

// writeHeld builds the held reply from the change's outcome and writes it
// without blocking its caller: whatever the socket does not take at once
// is written by a goroutine of its own (a client slow to read its replies
// must not hold up the journal).
func (c *serverConn) writeHeld(outcome error) {
	h := &c.heldReply
	result, err := outcomeReply(&h.held, h.result, h.err, outcome)
	h.payload = c.appendOutcome(h.payload[:0], h.id, h.method, result, err)
	h.frame = appendWrapped(h.frame[:0], h.payload)
	h.result, h.err, h.held = nil, nil, replyhold.Held{}
	n, werr := writeNow(c.nc, h.frame)
	if werr != nil || n == len(h.frame) {
		h.done <- werr
		return
	}
	go func() {
		_, werr := c.nc.Write(h.frame[n:])
		h.done <- werr
	}()
}

// waitHeld waits until the held reply, if any, is written, and returns the
// write's error. If the server gives up on its handlers (a forced
// shutdown) it stops waiting.
func (c *serverConn) waitHeld() error {
	if !c.holding {
		return nil
	}
	select {
	case err := <-c.heldReply.done:
		c.holding = false
		return err
	case <-c.srv.handlerCtx.Done():
		return c.srv.handlerCtx.Err()
	}
}

// waitOutcome waits on the calling goroutine for a deferred change and
// returns the reply's result.
func waitOutcome(ctx context.Context, held *replyhold.Held, result any, err error) (any, error) {
	ch := make(chan error, 1)
	held.Await(func(outcome error) { ch <- outcome })
	var outcome error
	select {
	case outcome = <-ch:
	case <-ctx.Done():
		outcome = ctx.Err()
	}
	return outcomeReply(held, result, err, outcome)
}

// outcomeReply is the reply to a request whose change had outcome: what
// the handler's builder makes of it, or without one, the handler's own
// answer for a durable change and the outcome's error otherwise. The
// request's After functions then learn the reply's error.
func outcomeReply(held *replyhold.Held, result any, err, outcome error) (any, error) {
	switch {
	case held.Build != nil:
		result, err = held.Build(outcome)
	case outcome != nil:
		result, err = nil, outcome
	}
	held.Built(err)
	return result, err
}
