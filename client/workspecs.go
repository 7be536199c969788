package client

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"unicode/utf8"

	"github.com/coordinated/coordinated/pyvalue"
)

// The work spec methods (docs/spec/PROTOCOL.md §8.1 to §8.8).

// ValidateWorkSpec is the Python TaskMaster's client-side check before
// set_work_spec: the spec is a map with a `name` and a numeric `min_gb`.
// SetWorkSpec itself does not apply it (the server does not require
// min_gb, and migrate copies specs as they are).
func ValidateWorkSpec(spec any) error {
	if _, ok := Get(spec, "name"); !ok {
		return errors.New(`work_spec lacks "name"`)
	}
	v, ok := Get(spec, "min_gb")
	if _, num := Float(v); !ok || !num || isBool(v) {
		return errors.New(`work_spec["min_gb"] must be a number`)
	}
	return nil
}

func isBool(v any) bool { _, ok := v.(bool); return ok }

// SetWorkSpec creates or replaces a work spec. spec is a map (normally
// map[any]any with cbor.ByteString keys, as a decoded spec or
// pyvalue.FromYAML gives).
func (c *Client) SetWorkSpec(ctx context.Context, spec any) error {
	res, err := c.Call(ctx, "set_work_spec", spec)
	if err != nil {
		return err
	}
	return okPair("set_work_spec", res)
}

// okPair checks a (true, null) answer.
func okPair(method string, res any) error {
	v, msg, err := pair(method, res)
	if err != nil {
		return err
	}
	if v != true {
		if msg == "" {
			msg = fmt.Sprintf("refused (%v)", v)
		}
		return &InBandError{Method: method, Message: msg}
	}
	return nil
}

// GetWorkSpec returns a work spec's definition, or nil when there is no
// such spec.
func (c *Client) GetWorkSpec(ctx context.Context, name string) (any, error) {
	return c.Call(ctx, "get_work_spec", specArg(name))
}

// ListWorkSpecs returns one page of work spec definitions from start
// (nil: the beginning; limit 0: no limit) and the start of the next page
// (nil when complete).
func (c *Client) ListWorkSpecs(ctx context.Context, start any, limit int) (specs []any, next any, err error) {
	opts := Map{}
	if limit > 0 {
		opts["limit"] = limit
	}
	if start != nil {
		opts["start"] = start
	}
	res, err := c.Call(ctx, "list_work_specs", opts)
	if err != nil {
		return nil, nil, err
	}
	l, ok := List(res)
	if !ok || len(l) != 2 {
		return nil, nil, fmt.Errorf("list_work_specs: expected (specs, next), got %v", res)
	}
	specs, ok = List(l[0])
	if !ok && l[0] != nil {
		return nil, nil, fmt.Errorf("list_work_specs: expected a list of specs, got %v", l[0])
	}
	return specs, l[1], nil
}

// WorkSpecs returns every work spec definition, following `next` as the
// Python client's iter_work_specs does (it sends {} first).
func (c *Client) WorkSpecs(ctx context.Context) ([]any, error) {
	var all []any
	var start any
	for pages := 0; ; pages++ {
		specs, next, err := c.ListWorkSpecs(ctx, start, 0)
		if err != nil {
			return nil, err
		}
		all = append(all, specs...)
		if next == nil {
			return all, nil
		}
		if reflect.DeepEqual(next, start) || pages > 1_000_000 {
			return nil, fmt.Errorf("list_work_specs: the server keeps answering next=%v", next)
		}
		start = next
	}
}

// WorkSpecNames returns the names of every work spec, in the order the
// server listed them.
func (c *Client) WorkSpecNames(ctx context.Context) ([]string, error) {
	specs, err := c.WorkSpecs(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		v, _ := Get(s, "name")
		n, ok := Text(v)
		if !ok {
			return nil, fmt.Errorf("list_work_specs: a spec without a string name: %v", s)
		}
		names = append(names, n)
	}
	return names, nil
}

// ControlWorkSpec changes a spec's control settings (status, continuous,
// interval, max_running, weight).
func (c *Client) ControlWorkSpec(ctx context.Context, name string, opts Map) error {
	res, err := c.Call(ctx, "control_work_spec", specArg(name), opts)
	if err != nil {
		return err
	}
	return okPair("control_work_spec", res)
}

// PauseWorkSpec pauses (paused) or resumes a work spec.
func (c *Client) PauseWorkSpec(ctx context.Context, name string, paused bool) error {
	status := Runnable
	if paused {
		status = Paused
	}
	return c.ControlWorkSpec(ctx, name, Map{"status": status})
}

// WorkSpecMeta is get_work_spec_meta's answer.
type WorkSpecMeta struct {
	Status     int
	Continuous bool
	Interval   any // number or nil
	MaxRunning any // int or nil
	Weight     any
}

// GetWorkSpecMeta returns a spec's control settings.
func (c *Client) GetWorkSpecMeta(ctx context.Context, name string) (*WorkSpecMeta, error) {
	res, err := c.Call(ctx, "get_work_spec_meta", specArg(name))
	if err != nil {
		return nil, err
	}
	v, msg, err := pair("get_work_spec_meta", res)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, &InBandError{Method: "get_work_spec_meta", Message: msg}
	}
	m := &WorkSpecMeta{}
	s, _ := Get(v, "status")
	st, _ := Int(s)
	m.Status = int(st)
	cont, _ := Get(v, "continuous")
	m.Continuous = cont == true
	m.Interval, _ = Get(v, "interval")
	m.MaxRunning, _ = Get(v, "max_running")
	m.Weight, _ = Get(v, "weight")
	return m, nil
}

// Clear deletes every work spec and unit; it returns the number of specs
// deleted.
func (c *Client) Clear(ctx context.Context) (int64, error) {
	res, err := c.Call(ctx, "clear")
	if err != nil {
		return 0, err
	}
	n, _ := Int(res)
	return n, nil
}

// DelWorkSpec deletes a work spec and its units.
func (c *Client) DelWorkSpec(ctx context.Context, name string) error {
	res, err := c.Call(ctx, "del_work_spec", specArg(name))
	if err != nil {
		return err
	}
	return okPair("del_work_spec", res)
}

// Archive applies the server's retention settings to finished and failed
// units of the named specs (all specs when names is empty).
func (c *Client) Archive(ctx context.Context, names ...string) error {
	opts := Map{}
	if len(names) > 0 {
		opts["work_spec_names"] = nameList(names)
	}
	_, err := c.Call(ctx, "archive", opts)
	return err
}

// specArg is how a work spec name is sent. The Python daemon keys its
// specs by the Python 2 string it was given, and a byte string equals a
// unicode one only when it is ASCII: a name with other characters is
// almost always unicode there (YAML and JSON give Python 2 unicode for
// it: flow files, `coordinate load`, list_work_specs of a spec set so),
// so it is typed as Python 2 typed such a string (pyvalue.String); a name
// that is not UTF-8 can only be a byte string. coordinated takes either.
func specArg(name string) any {
	if !utf8.ValidString(name) {
		return []byte(name)
	}
	return pyvalue.String(name)
}
