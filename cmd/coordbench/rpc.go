package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/internal/cborx"
)

// opts builds an options map with byte-string keys, as a Python 2 client
// sends them.
type opts = map[cbor.ByteString]any

// conn is one client connection with its own latency samples.
type conn struct {
	c   *cborrpc.Client
	lat latencies
	id  int
}

// call makes one timed RPC and decodes its result generically. The hot
// loops use callRaw instead.
func (c *conn) call(method string, params ...any) (any, error) {
	start := time.Now()
	res, err := c.c.Call(method, params...)
	c.lat.add(method, time.Since(start))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return res, nil
}

// callRaw makes one timed RPC and returns its result still encoded, so
// the load generator spends as little of the shared CPU as possible.
func (c *conn) callRaw(method string, params ...any) (cbor.RawMessage, error) {
	start := time.Now()
	res, err := c.c.CallRaw(method, params...)
	c.lat.add(method, time.Since(start))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return res, nil
}

// callOK makes a call whose result must be the pair (true, msg).
func (c *conn) callOK(method string, params ...any) error {
	res, err := c.callRaw(method, params...)
	if err != nil {
		return err
	}
	if pair, _, ok := listElements(res); !ok || len(pair) != 2 || !bytes.Equal(pair[0], cborTrue) {
		return fmt.Errorf("%s: unexpected result %s", method, showRaw(res))
	}
	return nil
}

// Encoded items the replies are compared with.
var (
	cborTrue = []byte{0xf5}
	cborNull = []byte{0xf6}
)

// showRaw renders an encoded result for error messages.
func showRaw(raw []byte) string {
	var v any
	if err := cborrpc.DecMode().Unmarshal(raw, &v); err != nil {
		return fmt.Sprintf("undecodable % x (%v)", raw, err)
	}
	return show(v)
}

// show renders a decoded result for error messages, bytes as text.
func show(v any) string {
	switch x := v.(type) {
	case []byte:
		return fmt.Sprintf("%q", x)
	case cborrpc.Tuple:
		return show([]any(x))
	case []any:
		s := "["
		for i, e := range x {
			if i > 0 {
				s += " "
			}
			s += show(e)
		}
		return s + "]"
	}
	return fmt.Sprintf("%v", v)
}

// mustEncode encodes a request parameter once, ahead of the calls that
// send it. Its inputs are the load generator's own constants.
func mustEncode(v any) cbor.RawMessage {
	raw, err := cborrpc.EncMode().Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("coordbench: encoding %#v: %v", v, err))
	}
	return raw
}

// withConns dials n connections and runs fn on each concurrently. It
// returns the merged latencies and the first error. Connections are
// closed when fn returns; their deadline follows ctx.
func (b *bench) withConns(ctx context.Context, n int, fn func(ctx context.Context, c *conn) error) (latencies, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conns := make([]*conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		cl, err := cborrpc.DialContext(ctx, b.addr)
		if err != nil {
			return nil, err
		}
		if d, ok := ctx.Deadline(); ok {
			cl.Conn().SetDeadline(d)
		}
		conns = append(conns, &conn{c: cl, lat: latencies{}, id: i})
	}
	// Unblock calls in flight when the context ends early.
	stop := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			c.c.Conn().SetDeadline(time.Now())
		}
	})
	defer stop()

	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = fn(ctx, c); errs[i] != nil {
				cancel() // stop the others
			}
		}()
	}
	wg.Wait()
	all := latencies{}
	for _, c := range conns {
		all.merge(c.lat)
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return all, err
		}
	}
	return all, errors.Join(errs...)
}

// workUnit is one unit handed out by get_work: spec and key as strings
// and as the encoded items to send back with update_work_unit.
type workUnit struct {
	spec, key       []byte
	specRaw, keyRaw cbor.RawMessage
	data            cbor.RawMessage
}

// workOptions encodes get_work's options for each max_jobs value asked
// for, once.
type workOptions struct {
	specs   []any // work_spec_names, nil: not sent
	encoded map[int]cbor.RawMessage
}

func (w *workOptions) get(maxJobs int) cbor.RawMessage {
	if raw, ok := w.encoded[maxJobs]; ok {
		return raw
	}
	o := opts{"lease_time": 300, "max_jobs": maxJobs}
	if w.specs != nil {
		o["work_spec_names"] = w.specs
	}
	if w.encoded == nil {
		w.encoded = make(map[int]cbor.RawMessage)
	}
	raw := mustEncode(o)
	w.encoded[maxJobs] = raw
	return raw
}

// getWork asks for up to maxJobs units and returns them (none when there
// is no work). worker is the encoded worker id. It checks the result
// shape the legacy client relies on (PROTOCOL §8.16): a triple for
// max_jobs 1, a list otherwise.
func (c *conn) getWork(worker cbor.RawMessage, maxJobs int, o *workOptions) ([]workUnit, error) {
	res, err := c.callRaw("get_work", worker, o.get(maxJobs))
	if err != nil {
		return nil, err
	}
	pair, _, ok := listElements(res)
	if !ok || len(pair) != 2 {
		return nil, fmt.Errorf("get_work: result %s is not a pair", showRaw(res))
	}
	if maxJobs == 1 {
		triple, isTuple, ok := listElements(pair[0])
		if !ok || !isTuple || len(triple) != 3 {
			return nil, fmt.Errorf("get_work: max_jobs 1 returned %s, not a triple", showRaw(pair[0]))
		}
		if bytes.Equal(triple[0], cborNull) || bytes.Equal(triple[1], cborNull) {
			return nil, nil
		}
		u, err := toUnit(triple)
		return []workUnit{u}, err
	}
	list, isTuple, ok := listElements(pair[0])
	if !ok || isTuple {
		return nil, fmt.Errorf("get_work: max_jobs %d returned %s, not a list", maxJobs, showRaw(pair[0]))
	}
	units := make([]workUnit, 0, len(list))
	for _, e := range list {
		triple, isTuple, ok := listElements(e)
		if !ok || !isTuple || len(triple) != 3 {
			return nil, fmt.Errorf("get_work: list element %s is not a triple", showRaw(e))
		}
		u, err := toUnit(triple)
		if err != nil {
			return nil, err
		}
		units = append(units, u)
	}
	return units, nil
}

// listElements returns the elements of a list or tuple result (which the
// client has already validated) and whether it was a tuple.
func listElements(item []byte) (elems []cbor.RawMessage, tuple, ok bool) {
	_, tuple = cborx.Untuple(item)
	elems, ok = cborx.List(nil, item)
	return elems, tuple, ok
}

func toUnit(triple []cbor.RawMessage) (workUnit, error) {
	spec, _, ok1 := cborx.String(triple[0])
	key, _, ok2 := cborx.String(triple[1])
	if !ok1 || !ok2 {
		return workUnit{}, fmt.Errorf("get_work: spec %s or key %s is not a string", showRaw(triple[0]), showRaw(triple[1]))
	}
	return workUnit{spec: spec, key: key, specRaw: triple[0], keyRaw: triple[1], data: triple[2]}, nil
}
