package coordinate

import (
	"fmt"
	"math"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// Default control settings (SEMANTICS §4.2).
const (
	// DefaultWeight is a spec's weight when neither `weight` nor `nice`
	// is given.
	DefaultWeight = 20
)

// ParsedWorkSpec is a work-spec definition as CheckWorkSpec read it.
type ParsedWorkSpec struct {
	Name Name
	Meta WorkSpecMeta
	// Echo holds the settings get_work_spec_meta reports, as the Python
	// daemon reported them for this definition.
	Echo MetaEcho
	// Unusable lists the special keys whose value the scheduler cannot
	// use. The definition is still stored verbatim (the Python daemon
	// stored it); each such key is read as Reading says, and the caller
	// logs one warning per key (docs/compat.md, "Work-spec definitions").
	Unusable []UnusableKey
}

// MetaEcho is what the Python daemon's get_work_spec_meta showed for the
// settings it derived from a definition, before any control_work_spec.
type MetaEcho struct {
	// Continuous is the `continuous` value as given (Python echoed it
	// unconverted: 1 stays 1); nil when the key is absent.
	Continuous cbor.RawMessage
	// Interval is the `interval` value as given when it is a number, a
	// float when it was a numeric string (Python applied float() to
	// strings only); nil when absent or null.
	Interval cbor.RawMessage
	// Weight is int(weight), else max(1, 20-int(nice)), not clamped.
	Weight int64
	// MaxRunning is int(max_running); nil when absent or null.
	MaxRunning *int64
}

// UnusableKey is one special key of a stored definition whose value the
// scheduler cannot use.
type UnusableKey struct {
	Key     string // e.g. "min_gb"
	Got     string // the value, briefly
	Reading string // how it is read instead, e.g. "0 (no minimum)"
}

// ParseWorkSpec validates a definition and derives its name and control
// settings; CheckWorkSpec says how.
func ParseWorkSpec(def Data) (Name, WorkSpecMeta, error) {
	p, err := CheckWorkSpec(def)
	return p.Name, p.Meta, err
}

// CheckWorkSpec validates a definition (CBOR map, keys as byte OR text
// strings) and derives its name and control settings (SEMANTICS §4,
// DECISIONS §1-3). It refuses exactly what the Python daemon refused, with
// an error wrapping ErrInvalidWorkSpec that names the key at fault: a
// definition that is not a map, a missing or non-string `name`, and the
// keys Python converted with int()/float() when that conversion fails
// (`weight`, `nice` when there is no weight, `max_running`, `max_getwork`,
// `interval`). Any other value is accepted; where the scheduler cannot use
// it, it is listed in Unusable and read safely.
//
// NextContinuous is left zero: it is not part of the definition, and the
// caller carries it over from the spec being replaced.
func CheckWorkSpec(def Data) (ParsedWorkSpec, error) {
	var out ParsedWorkSpec
	pairs, isMap, err := rawMap(def)
	if err != nil {
		return out, fmt.Errorf("%w: definition is not valid CBOR: %v", ErrInvalidWorkSpec, err)
	}
	if !isMap {
		return out, fmt.Errorf("%w: definition must be a map, got %s", ErrInvalidWorkSpec, describe(def))
	}
	keys := stringKeyed(pairs)

	rawName, ok := keys["name"]
	if !ok {
		return out, fmt.Errorf("%w: missing \"name\"", ErrInvalidWorkSpec)
	}
	name, ok := rawString(rawName)
	if !ok {
		return out, fmt.Errorf("%w: \"name\" must be a string, got %s", ErrInvalidWorkSpec, describe(rawName))
	}
	out.Name = name

	p := specParser{keys: keys, out: &out}
	m := &out.Meta
	*m = WorkSpecMeta{ThenPreempts: true}

	// Keys Python converted when the spec was set: a failed conversion
	// refused the spec there, so it does here.
	if v, ok := p.present("weight"); ok {
		out.Echo.Weight = p.pyInt("weight", v)
	} else if v, ok := keys["nice"]; ok {
		// Python read int(data.get('nice', 0)): an explicit null fails.
		nice := int64(ClampInt32(p.pyInt("nice", v)))
		out.Echo.Weight = max(1, DefaultWeight-nice)
	} else {
		out.Echo.Weight = DefaultWeight
	}
	m.Weight = ClampInt32(out.Echo.Weight)
	if v, ok := p.present("max_running"); ok {
		n := p.pyInt("max_running", v)
		out.Echo.MaxRunning = &n
		m.MaxRunning = EncodeMaxRunning(n)
	}
	if v, ok := p.present("max_getwork"); ok {
		// Python took min(max_jobs, max_getwork) but always handed out
		// the first unit: anything below 1 means one per call.
		m.MaxGetwork = max(1, ClampInt32(p.pyInt("max_getwork", v)))
	}
	if v, ok := p.present("interval"); ok {
		m.Interval = p.interval(v)
	}
	if p.err != nil {
		return ParsedWorkSpec{}, p.err
	}

	// Keys Python only tested for truth.
	m.Paused = p.truthy("disabled")
	m.CanBeContinuous = p.truthy("continuous")
	m.Continuous = m.CanBeContinuous
	if v, ok := keys["continuous"]; ok {
		out.Echo.Continuous = v
	}
	if v, ok := p.present("then_preempts"); ok {
		m.ThenPreempts = Truthy(v)
	}

	// Keys Python stored without reading (or never knew): any value is
	// kept; one the scheduler cannot use is read as the key being unset.
	if v, ok := p.present("priority"); ok {
		if n, ok := PyInt(v); ok {
			m.Priority = ClampInt32(n)
		} else {
			p.unusable("priority", v, "0 (no spec priority)")
		}
	}
	if v, ok := p.present("max_retries"); ok {
		if n, ok := PyInt(v); ok {
			m.MaxRetries = max(0, ClampInt32(n))
		} else {
			p.unusable("max_retries", v, "0 (no retry limit)")
		}
	}
	if v, ok := p.present("min_gb"); ok {
		if f, ok := PyFloat(v); ok && !math.IsNaN(f) {
			m.MinGB = f
		} else {
			p.unusable("min_gb", v, "0 (no memory minimum)")
		}
	}
	m.Then = p.str("then", "no successor (chains nothing)")
	m.Runtime = p.str("runtime", `"" (the Python runtime, like a spec without one)`)
	m.Task = SpecTask(out.Name.Bytes, m.Runtime, def)
	return out, nil
}

// EncodeMaxRunning turns a `max_running` value as Python read it (int())
// into WorkSpecMeta.MaxRunning: n > 0 is kept (saturated to the int32
// range); n <= 0 meant "run none at a time" in Python and is stored as n-1,
// so that 0 keeps meaning "unlimited" (unset).
func EncodeMaxRunning(n int64) int {
	if n > 0 {
		return ClampInt32(n)
	}
	return ClampInt32(max(n, math.MinInt32+1) - 1)
}

// MaxRunningValue returns the `max_running` value m encodes (see
// EncodeMaxRunning), and false when it is unset (unlimited).
func (m *WorkSpecMeta) MaxRunningValue() (int, bool) {
	switch {
	case m.MaxRunning > 0:
		return m.MaxRunning, true
	case m.MaxRunning < 0:
		return m.MaxRunning + 1, true
	}
	return 0, false
}

// specParser reads special keys of a definition, remembering the first
// error so CheckWorkSpec can report one key at fault.
type specParser struct {
	keys map[string]cbor.RawMessage
	out  *ParsedWorkSpec
	err  error
}

// present returns the key's value unless it is absent or null (null means
// "not set" for every special key).
func (p *specParser) present(key string) (cbor.RawMessage, bool) {
	v, ok := p.keys[key]
	if !ok || isNull(v) {
		return nil, false
	}
	return v, true
}

func (p *specParser) fail(key, want string, got []byte) {
	if p.err == nil {
		_, isString := rawString(got)
		p.err = &SpecKeyError{
			Key:       key,
			TypeError: !isString && key != "interval",
			msg:       fmt.Sprintf("%v: %q must be %s, got %s", ErrInvalidWorkSpec, key, want, describe(got)),
		}
	}
}

// SpecKeyError is CheckWorkSpec's error for a key whose value Python's
// conversion refused; it wraps ErrInvalidWorkSpec.
type SpecKeyError struct {
	Key string
	// TypeError reports that Python raised TypeError (int() of null, a
	// list, a map) rather than ValueError (a string it could not read;
	// any refused `interval`).
	TypeError bool
	msg       string
}

func (e *SpecKeyError) Error() string { return e.msg }
func (e *SpecKeyError) Unwrap() error { return ErrInvalidWorkSpec }

func (p *specParser) unusable(key string, got []byte, reading string) {
	p.out.Unusable = append(p.out.Unusable, UnusableKey{Key: key, Got: describe(got), Reading: reading})
}

// pyInt is int(v), failing the spec where Python's int() raised.
func (p *specParser) pyInt(key string, v cbor.RawMessage) int64 {
	n, ok := PyInt(v)
	if !ok {
		p.fail(key, "an integer", v)
	}
	return n
}

// interval reads `interval` as Python did: a number as is, a string
// through float(), anything else refused. Non-positive values mean no
// interval; values past the Duration range (and NaN, which Python never
// reached again) saturate.
func (p *specParser) interval(v cbor.RawMessage) time.Duration {
	var sec float64
	if IsPyNumber(v) {
		sec, _ = PyFloat(v)
		p.out.Echo.Interval = v
	} else if s, isString := rawString(v); isString {
		f, ok := parsePyFloat(s.Bytes)
		if !ok {
			p.fail("interval", "a number", v)
			return 0
		}
		sec = f
		enc, _ := cbor.Marshal(f)
		p.out.Echo.Interval = enc
	} else {
		p.fail("interval", "a number", v)
		return 0
	}
	return IntervalFromSeconds(sec)
}

// MaxInterval is the longest continuous interval kept (about 146 years):
// longer ones, NaN included (Python never created a unit again after a NaN
// interval), saturate to it, so that now+interval cannot overflow.
const MaxInterval = time.Duration(1 << 62)

// IntervalFromSeconds converts an `interval` in seconds: <= 0 is no
// interval, anything past MaxInterval is MaxInterval.
func IntervalFromSeconds(sec float64) time.Duration {
	switch {
	case math.IsNaN(sec) || sec >= MaxInterval.Seconds():
		return MaxInterval
	case sec <= 0:
		return 0
	}
	return time.Duration(sec * float64(time.Second))
}

func (p *specParser) truthy(key string) bool {
	v, ok := p.present(key)
	return ok && Truthy(v)
}

// str reads a string-valued key; another value is unusable and read as
// "" (reading says what that means).
func (p *specParser) str(key, reading string) string {
	v, ok := p.present(key)
	if !ok {
		return ""
	}
	s, ok := rawString(v)
	if !ok {
		p.unusable(key, v, reading)
		return ""
	}
	return s.Bytes
}

// Apply changes the control settings c names (WorkSpecControl) and
// records them in Controlled. Turning continuous on needs CanBeContinuous,
// else it fails with ErrCannotBeContinuous and changes nothing. A negative
// interval counts as 0 (none). It is the one statement of
// control_work_spec's effect: every backend applies controls with it.
func (m *WorkSpecMeta) Apply(c WorkSpecControl) error {
	if c.Continuous != nil && *c.Continuous && !m.CanBeContinuous {
		return ErrCannotBeContinuous
	}
	if c.Paused != nil {
		m.Paused = *c.Paused
	}
	if c.Continuous != nil {
		m.Continuous = *c.Continuous
		m.Controlled |= ControlledContinuous
	}
	if c.Interval != nil {
		m.Interval = max(0, *c.Interval)
		m.Controlled |= ControlledInterval
	}
	if c.MaxRunning != nil {
		m.MaxRunning = *c.MaxRunning // already encoded (EncodeMaxRunning)
		m.Controlled |= ControlledMaxRunning
	}
	if c.Weight != nil {
		m.Weight = *c.Weight
		m.Controlled |= ControlledWeight
	}
	return nil
}

// SpecTask derives WorkSpecMeta.Task from a stored definition, for
// backends that keep the control settings apart from the definition and
// do not store the task: `task` when it is a string, else the spec's name;
// "" when the spec has no runtime.
func SpecTask(name string, runtime string, def Data) string {
	if runtime == "" {
		return ""
	}
	if pairs, isMap, err := rawMap(def); err == nil && isMap {
		if v, ok := stringKeyed(pairs)["task"]; ok {
			if s, ok := rawString(v); ok && s.Bytes != "" {
				return s.Bytes
			}
		}
	}
	return name
}
