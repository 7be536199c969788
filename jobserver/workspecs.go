package jobserver

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/cborx"
)

// noSuchWorkSpec is the in-band message most methods use for an unknown
// spec: "no such work_spec 'NAME'" with the Python repr of the name.
func noSuchWorkSpec(name coordinate.Name) []byte {
	return message("no such work_spec " + pyReprName(name))
}

// specCallError answers a failed call on work spec name: a missing spec is
// the in-band reply (missing, "no such work_spec ..."), any other error a
// backend failure of method.
func (js *JobServer) specCallError(method string, name coordinate.Name, missing any, err error) (any, error) {
	if errors.Is(err, coordinate.ErrNoSuchWorkSpec) {
		return pair(missing, noSuchWorkSpec(name)), nil
	}
	return nil, js.backendError(method, err)
}

// noSuchWorkSpecPlain is the variant control_work_spec and
// get_work_spec_meta used: "no such work spec NAME", unquoted.
func noSuchWorkSpecPlain(name coordinate.Name) []byte {
	return message("no such work spec " + name.Bytes)
}

// setWorkSpec: set_work_spec(work_spec) -> (true, null) (PROTOCOL §8.1).
func (js *JobServer) setWorkSpec(ctx context.Context, p []cbor.RawMessage) (any, error) {
	def := p[0]
	if cborx.MajorOf(def) != 5 {
		return nil, typeError("work_spec must be a dict")
	}
	nameRaw := lookupKey(def, "name")
	if nameRaw == nil {
		return nil, &pyError{kind: "KeyError", detail: "name"}
	}
	if mt := cborx.MajorOf(nameRaw); mt != 2 && mt != 3 {
		return nil, typeError("work spec 'name' must be a string")
	}
	parsed, err := coordinate.CheckWorkSpec(coordinate.Data(def))
	if keyErr := (*coordinate.SpecKeyError)(nil); errors.As(err, &keyErr) && keyErr.TypeError {
		return nil, typeError("%v", err)
	} else if err != nil {
		return nil, valueError("%v", err)
	}
	if _, err := js.ns.SetWorkSpec(ctx, coordinate.Data(def)); err != nil {
		if errors.Is(err, coordinate.ErrInvalidWorkSpec) {
			return nil, valueError("%v", err)
		}
		return nil, js.backendError("set_work_spec", err)
	}
	// Stored as given, like the Python daemon did; say once per set which
	// keys the scheduler reads differently (docs/compat.md).
	for _, u := range parsed.Unusable {
		js.log.Warn("work spec key has a value the scheduler cannot use; stored as given",
			"work_spec", cborrpc.LogValue(parsed.Name.Bytes), "key", u.Key, "value", cborrpc.LogValue(u.Got), "read_as", u.Reading)
	}
	return okPair(), nil
}

// getWorkSpec: get_work_spec(name) -> definition or null (§8.2).
func (js *JobServer) getWorkSpec(ctx context.Context, p []cbor.RawMessage) (any, error) {
	name, err := decodeName(p[0], "work_spec_name")
	if err != nil {
		return nil, err
	}
	spec, err := js.ns.WorkSpec(ctx, name.Bytes)
	if errors.Is(err, coordinate.ErrNoSuchWorkSpec) {
		return nil, nil
	} else if err != nil {
		return nil, js.backendError("get_work_spec", err)
	}
	return byteifyDefinition(spec.Definition), nil
}

// byteifyDefinition returns a stored definition with text values of
// `module` and `run_function` turned into byte strings: the Python 2 worker
// passes them to __import__, which rejects unicode (PROTOCOL §5.3). The
// stored bytes are returned untouched when no change is needed.
func byteifyDefinition(def coordinate.Data) cbor.RawMessage {
	pairs, err := splitMap(def)
	if err != nil {
		return cbor.RawMessage(def)
	}
	changed := false
	for i, pr := range pairs {
		if cborx.MajorOf(pr.Value) != 3 {
			continue
		}
		k, ok := stringKey(pr.Key)
		if !ok || (k != "module" && k != "run_function") {
			continue
		}
		var s string
		if decMode.Unmarshal(pr.Value, &s) != nil {
			continue
		}
		pairs[i].Value = encodeBytes(s)
		changed = true
	}
	if !changed {
		return cbor.RawMessage(def)
	}
	return joinMap(pairs)
}

// listWorkSpecs: list_work_specs(options) -> ([definition...], next) (§8.3).
func (js *JobServer) listWorkSpecs(ctx context.Context, p []cbor.RawMessage) (any, error) {
	opts, err := decodeOptions(p[0], "options")
	if err != nil {
		return nil, err
	}
	var start string
	if opts.present("start") {
		n, err := decodeName(opts["start"], "start")
		if err != nil {
			return nil, err
		}
		start = n.Bytes
	}
	limit := 0
	if opts.present("limit") {
		l, err := decodePyInt(opts["limit"], "limit")
		if err != nil {
			return nil, err
		}
		if l <= 0 {
			// Python sliced [:limit]; a non-positive limit lists nothing
			// useful, so list one page of nothing and point at the start.
			return pair([]any{}, nil), nil
		}
		limit = int(min(l, math.MaxInt32))
	}
	specs, next, err := js.ns.ListWorkSpecs(ctx, start, limit)
	if err != nil {
		return nil, js.backendError("list_work_specs", err)
	}
	defs := make([]any, len(specs))
	for i, s := range specs {
		defs[i] = byteifyDefinition(s.Definition)
	}
	return pair(defs, optionalNameValue(next)), nil
}

// controlWorkSpec: control_work_spec(name, options) -> (ok, msg) (§8.4).
func (js *JobServer) controlWorkSpec(ctx context.Context, p []cbor.RawMessage) (any, error) {
	name, err := decodeName(p[0], "work_spec_name")
	if err != nil {
		return nil, err
	}
	opts, err := decodeOptions(p[1], "options")
	if err != nil {
		return nil, err
	}
	var ctl coordinate.WorkSpecControl
	if opts.present("status") {
		s, err := decodeInt(opts["status"], "status")
		if err != nil {
			return nil, err
		}
		var paused bool
		switch s {
		case 1:
		case 2:
			paused = true
		default:
			return nil, valueError("status must be 1 (runnable) or 2 (paused), not %d", s)
		}
		ctl.Paused = &paused
	}
	if _, ok := opts["continuous"]; ok {
		c, err := decodeTruth(opts["continuous"], "continuous")
		if err != nil {
			return nil, err
		}
		ctl.Continuous = &c
	}
	if raw, ok := opts["interval"]; ok {
		var d time.Duration
		if !cborx.IsNull(raw) {
			sec, err := decodeNumber(raw, "interval")
			if err != nil {
				return nil, err
			}
			d = coordinate.IntervalFromSeconds(sec)
		}
		ctl.Interval = &d
	}
	if raw, ok := opts["max_running"]; ok {
		n := 0 // null: unlimited
		if !cborx.IsNull(raw) {
			v, err := decodePyInt(raw, "max_running")
			if err != nil {
				return nil, err
			}
			n = coordinate.EncodeMaxRunning(v) // <= 0: run none, as in Python
		}
		ctl.MaxRunning = &n
	}
	if opts.present("weight") {
		w, err := decodePyInt(opts["weight"], "weight")
		if err != nil {
			return nil, err
		}
		n := coordinate.ClampInt32(w)
		ctl.Weight = &n
	}
	err = js.ns.ControlWorkSpec(ctx, name.Bytes, ctl)
	switch {
	case err == nil:
		return okPair(), nil
	case errors.Is(err, coordinate.ErrNoSuchWorkSpec):
		return pair(false, noSuchWorkSpecPlain(name)), nil
	case errors.Is(err, coordinate.ErrCannotBeContinuous):
		return pair(false, message("cannot make non-continuous work spec "+name.Bytes+" continuous")), nil
	case errors.Is(err, coordinate.ErrInvalidWorkSpec):
		return nil, valueError("%v", err)
	}
	return nil, js.backendError("control_work_spec", err)
}

// getWorkSpecMeta: get_work_spec_meta(name) -> ({status, continuous,
// interval, max_running, weight}, null) (§8.5).
func (js *JobServer) getWorkSpecMeta(ctx context.Context, p []cbor.RawMessage) (any, error) {
	name, err := decodeName(p[0], "work_spec_name")
	if err != nil {
		return nil, err
	}
	spec, err := js.ns.WorkSpec(ctx, name.Bytes)
	if errors.Is(err, coordinate.ErrNoSuchWorkSpec) {
		return pair(nil, noSuchWorkSpecPlain(name)), nil
	} else if err != nil {
		return nil, js.backendError("get_work_spec_meta", err)
	}
	return pair(metaReply(spec), nil), nil
}

// metaReply is get_work_spec_meta's map. Python reported the values it
// derived from the definition as given (`continuous: 1` stays 1, `interval:
// 10` stays an integer, int() of `weight` and `max_running`), and after
// control_work_spec the values given there. A setting control_work_spec
// has not set since the definition was stored (Meta.Controlled) is echoed
// from the definition; one it set is rendered from the stored value: a
// bool, whole seconds as an integer, an integer. A setting that differs
// from the definition's counts as set (specs stored before Controlled
// was kept).
func metaReply(spec *coordinate.WorkSpec) map[cbor.ByteString]any {
	m := &spec.Meta
	status := 1
	if m.Paused {
		status = 2
	}
	var echo coordinate.MetaEcho
	derived := *m // an unparsable stored definition echoes nothing
	if p, err := coordinate.CheckWorkSpec(spec.Definition); err == nil {
		echo, derived = p.Echo, p.Meta
	}
	fromDefinition := func(c coordinate.ControlledSettings, same bool) bool {
		return m.Controlled&c == 0 && same
	}

	var continuous any = m.Continuous
	if fromDefinition(coordinate.ControlledContinuous, m.Continuous == derived.Continuous) && echo.Continuous != nil {
		continuous = echo.Continuous
	}
	var interval any
	switch {
	case fromDefinition(coordinate.ControlledInterval, m.Interval == derived.Interval):
		if echo.Interval != nil {
			interval = echo.Interval
		}
	case m.Interval == 0: // cleared: null
	case m.Interval%time.Second == 0:
		interval = int64(m.Interval / time.Second)
	default:
		interval = m.Interval.Seconds()
	}
	var weight any = m.Weight
	if fromDefinition(coordinate.ControlledWeight, m.Weight == derived.Weight) {
		weight = echo.Weight
	}
	var maxRunning any
	if fromDefinition(coordinate.ControlledMaxRunning, m.MaxRunning == derived.MaxRunning) && echo.MaxRunning != nil {
		maxRunning = *echo.MaxRunning
	} else if n, ok := m.MaxRunningValue(); ok {
		maxRunning = n
	}
	return map[cbor.ByteString]any{
		"status":      status,
		"continuous":  continuous,
		"interval":    interval,
		"max_running": maxRunning,
		"weight":      weight,
	}
}

// clear: clear() -> number of specs deleted (not a pair) (§8.6).
func (js *JobServer) clear(ctx context.Context, _ []cbor.RawMessage) (any, error) {
	n, err := js.ns.Clear(ctx)
	if err != nil {
		return nil, js.backendError("clear", err)
	}
	return n, nil
}

// delWorkSpec: del_work_spec(name) -> (ok, msg) (§8.7).
func (js *JobServer) delWorkSpec(ctx context.Context, p []cbor.RawMessage) (any, error) {
	name, err := decodeName(p[0], "work_spec_name")
	if err != nil {
		return nil, err
	}
	err = js.ns.DeleteWorkSpec(ctx, name.Bytes)
	if err != nil {
		return js.specCallError("del_work_spec", name, false, err)
	}
	return okPair(), nil
}

// archive: archive([options]) -> null (§8.8). Applies the configured
// retention policy, if any, to the listed specs: all when the option is
// absent or null, none when it is an empty list (as in Python, where only
// None means all).
func (js *JobServer) archive(ctx context.Context, p []cbor.RawMessage) (any, error) {
	opts, err := decodeOptions(p[0], "options")
	if err != nil {
		return nil, err
	}
	var names []string // none: every spec (coordinate.Namespace.Archive)
	if opts.present("work_spec_names") {
		ns, err := decodeNames(opts["work_spec_names"], "work_spec_names")
		if err != nil {
			return nil, err
		}
		if len(ns) == 0 {
			return nil, nil
		}
		names = nameBytes(ns)
	}
	if js.retention == nil {
		return nil, nil
	}
	err = js.ns.Archive(ctx, names, *js.retention)
	if err != nil && !errors.Is(err, coordinate.ErrNoSuchWorkSpec) {
		return nil, js.backendError("archive", err)
	}
	return nil, nil
}

// secondsDuration converts float seconds to a Duration, saturating.
func secondsDuration(sec float64) time.Duration {
	switch {
	case math.IsNaN(sec):
		return 0
	case sec >= math.MaxInt64/float64(time.Second):
		return math.MaxInt64
	case sec <= math.MinInt64/float64(time.Second):
		return math.MinInt64
	}
	return time.Duration(sec * float64(time.Second))
}
