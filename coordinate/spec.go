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

// ParseWorkSpec validates a definition (CBOR map, keys as byte OR text
// strings) and derives its name and control settings (SEMANTICS §4,
// DECISIONS §1-3). Errors wrap ErrInvalidWorkSpec and name the key at
// fault, e.g. `invalid work spec: "weight" must be an integer, got "abc"`.
//
// NextContinuous is left zero: it is not part of the definition, and the
// caller carries it over from the spec being replaced.
func ParseWorkSpec(def Data) (Name, WorkSpecMeta, error) {
	pairs, isMap, err := rawMap(def)
	if err != nil {
		return Name{}, WorkSpecMeta{}, fmt.Errorf("%w: definition is not valid CBOR: %v", ErrInvalidWorkSpec, err)
	}
	if !isMap {
		return Name{}, WorkSpecMeta{}, fmt.Errorf("%w: definition must be a map, got %s", ErrInvalidWorkSpec, describe(def))
	}
	keys := stringKeyed(pairs)

	rawName, ok := keys["name"]
	if !ok {
		return Name{}, WorkSpecMeta{}, fmt.Errorf("%w: missing \"name\"", ErrInvalidWorkSpec)
	}
	name, ok := rawString(rawName)
	if !ok {
		return Name{}, WorkSpecMeta{}, fmt.Errorf("%w: \"name\" must be a string, got %s", ErrInvalidWorkSpec, describe(rawName))
	}

	p := specParser{keys: keys}
	meta := WorkSpecMeta{
		Weight:       DefaultWeight,
		ThenPreempts: true,
	}
	meta.Priority = p.int("priority", 0)
	if _, hasWeight := p.present("weight"); hasWeight {
		meta.Weight = p.int("weight", DefaultWeight)
	} else if _, hasNice := p.present("nice"); hasNice {
		meta.Weight = max(1, 20-p.int("nice", 0))
	}
	meta.Paused = p.truthy("disabled")
	meta.CanBeContinuous = p.truthy("continuous")
	meta.Continuous = meta.CanBeContinuous
	meta.Interval = p.seconds("interval")
	meta.MaxRunning = max(0, p.int("max_running", 0))
	meta.MaxGetwork = max(0, p.int("max_getwork", 0))
	meta.MaxRetries = max(0, p.int("max_retries", 0))
	meta.MinGB = p.number("min_gb")
	meta.Then = p.str("then")
	if v, ok := p.present("then_preempts"); ok {
		meta.ThenPreempts = rawTruthy(v)
	}
	meta.Runtime = p.str("runtime")
	if meta.Runtime != "" {
		meta.Task = p.str("task")
		if meta.Task == "" {
			meta.Task = name.Bytes
		}
	}
	p.str("module")
	p.str("run_function")
	p.str("desc")
	if v, ok := p.present("config"); ok && p.err == nil {
		if _, isMap, _ := rawMap(v); !isMap {
			p.fail("config", "a map", v)
		}
	}
	if p.err != nil {
		return Name{}, WorkSpecMeta{}, p.err
	}
	return name, meta, nil
}

// specParser reads special keys of a definition, remembering the first
// error so ParseWorkSpec can report one key at fault.
type specParser struct {
	keys map[string]cbor.RawMessage
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
		p.err = fmt.Errorf("%w: %q must be %s, got %s", ErrInvalidWorkSpec, key, want, describe(got))
	}
}

func (p *specParser) int(key string, def int) int {
	v, ok := p.present(key)
	if !ok {
		return def
	}
	i, ok := rawInt(v)
	if !ok {
		p.fail(key, "an integer", v)
		return def
	}
	return i
}

func (p *specParser) number(key string) float64 {
	v, ok := p.present(key)
	if !ok {
		return 0
	}
	f, ok := rawNumberOrNumericString(v)
	if !ok || math.IsNaN(f) {
		p.fail(key, "a number", v)
		return 0
	}
	return f
}

// seconds reads a non-negative duration in (possibly fractional) seconds.
func (p *specParser) seconds(key string) time.Duration {
	f := p.number(key)
	if f <= 0 {
		return 0
	}
	if f > float64(math.MaxInt64)/float64(time.Second) {
		p.fail(key, "a number of seconds", p.keys[key])
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

func (p *specParser) truthy(key string) bool {
	v, ok := p.present(key)
	return ok && rawTruthy(v)
}

func (p *specParser) str(key string) string {
	v, ok := p.present(key)
	if !ok {
		return ""
	}
	s, ok := rawString(v)
	if !ok {
		p.fail(key, "a string", v)
		return ""
	}
	return s.Bytes
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
