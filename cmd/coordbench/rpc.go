package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"coordinated/cborrpc"

	"github.com/fxamacker/cbor/v2"
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

// call makes one timed RPC.
func (c *conn) call(method string, params ...any) (any, error) {
	start := time.Now()
	res, err := c.c.Call(method, params...)
	c.lat.add(method, time.Since(start))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return res, nil
}

// callOK makes a call whose result must be the pair (true, msg).
func (c *conn) callOK(method string, params ...any) error {
	res, err := c.call(method, params...)
	if err != nil {
		return err
	}
	pair, ok := res.(cborrpc.Tuple)
	if !ok || len(pair) != 2 || pair[0] != true {
		return fmt.Errorf("%s: unexpected result %s", method, show(res))
	}
	return nil
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

// workUnit is one unit handed out by get_work.
type workUnit struct {
	spec, key []byte
	data      any
}

// getWork asks for up to maxJobs units and returns them (none when there
// is no work). It checks the result shape the legacy client relies on
// (PROTOCOL §8.16): a triple for max_jobs 1, a list otherwise.
func (c *conn) getWork(worker string, maxJobs int, specs []any) ([]workUnit, error) {
	o := opts{"lease_time": 300, "max_jobs": maxJobs}
	if specs != nil {
		o["work_spec_names"] = specs
	}
	res, err := c.call("get_work", []byte(worker), o)
	if err != nil {
		return nil, err
	}
	pair, ok := res.(cborrpc.Tuple)
	if !ok || len(pair) != 2 {
		return nil, fmt.Errorf("get_work: result %s is not a pair", show(res))
	}
	if maxJobs == 1 {
		triple, ok := pair[0].(cborrpc.Tuple)
		if !ok || len(triple) != 3 {
			return nil, fmt.Errorf("get_work: max_jobs 1 returned %s, not a triple", show(pair[0]))
		}
		if triple[0] == nil || triple[1] == nil {
			return nil, nil
		}
		u, err := toUnit(triple)
		return []workUnit{u}, err
	}
	list, ok := pair[0].([]any)
	if !ok {
		return nil, fmt.Errorf("get_work: max_jobs %d returned %s, not a list", maxJobs, show(pair[0]))
	}
	units := make([]workUnit, 0, len(list))
	for _, e := range list {
		triple, ok := e.(cborrpc.Tuple)
		if !ok || len(triple) != 3 {
			return nil, fmt.Errorf("get_work: list element %s is not a triple", show(e))
		}
		u, err := toUnit(triple)
		if err != nil {
			return nil, err
		}
		units = append(units, u)
	}
	return units, nil
}

func toUnit(triple cborrpc.Tuple) (workUnit, error) {
	spec, err1 := asBytes(triple[0])
	key, err2 := asBytes(triple[1])
	if err := errors.Join(err1, err2); err != nil {
		return workUnit{}, fmt.Errorf("get_work: %w", err)
	}
	return workUnit{spec: spec, key: key, data: triple[2]}, nil
}

func asBytes(v any) ([]byte, error) {
	switch x := v.(type) {
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	}
	return nil, fmt.Errorf("%T %v is not a string", v, v)
}
