package jobserver

import (
	"fmt"
	"math"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/cborx"
)

// tagTuple is the CBOR tag the Python clients put on tuples.
const tagTuple = cborx.TagTuple

// decMode decodes request parameters: byte-string map keys are allowed (the
// Python clients send option keys as byte strings), everything else keeps
// fxamacker's safe defaults (nesting and size limits).
var decMode = mustDecMode()

func mustDecMode() cbor.DecMode {
	dm, err := cbor.DecOptions{MapKeyByteString: cbor.MapKeyByteStringAllowed}.DecMode()
	if err != nil {
		panic(err)
	}
	return dm
}

// signature describes one method's parameters for binding: their names (for
// keyword calls and messages) and how many are required.
type signature struct {
	method   string
	names    []string
	required int
}

// bind returns the request's parameters in positional order, nil for an
// omitted optional one. Missing required parameters and extra parameters are
// RPC errors, as Python's call semantics made them.
func (s signature) bind(req *cborrpc.Request) ([]cbor.RawMessage, error) {
	if req.NamedParams != nil && len(req.Params) == 0 {
		out := make([]cbor.RawMessage, len(s.names))
		used := 0
		for i, n := range s.names {
			if v, ok := req.NamedParams[n]; ok {
				out[i] = v
				used++
			} else if i < s.required {
				return nil, typeError("%s() missing required argument '%s'", s.method, n)
			}
		}
		if used != len(req.NamedParams) {
			for k := range req.NamedParams {
				if !s.has(k) {
					return nil, typeError("%s() got an unexpected keyword argument '%s'", s.method, k)
				}
			}
		}
		return out, nil
	}
	n := len(req.Params)
	if n < s.required || n > len(s.names) {
		if s.required == len(s.names) {
			return nil, typeError("%s() takes exactly %d arguments (%d given)", s.method, len(s.names), n)
		}
		return nil, typeError("%s() takes %d to %d arguments (%d given)", s.method, s.required, len(s.names), n)
	}
	if n == len(s.names) {
		return req.Params, nil // the usual call: every parameter given
	}
	out := make([]cbor.RawMessage, len(s.names))
	copy(out, req.Params)
	return out, nil
}

func (s signature) has(name string) bool {
	for _, n := range s.names {
		if n == name {
			return true
		}
	}
	return false
}

// The decoders below read raw items the cborrpc layer has already
// validated, through internal/cborx for the common shapes (definite
// strings, small integers, float64, arrays and maps of those); when cborx
// reports !ok (indefinite-length strings, bignums, half floats) they fall
// back to the general fxamacker decoder, which also words the errors.

// decodeName decodes a byte or text string, keeping its kind.
func decodeName(raw cbor.RawMessage, what string) (coordinate.Name, error) {
	if s, text, ok := cborx.String(raw); ok {
		return coordinate.Name{Bytes: string(s), Text: text}, nil
	}
	switch cborx.MajorOf(raw) {
	case 2:
		var b []byte
		if err := decMode.Unmarshal(raw, &b); err != nil {
			return coordinate.Name{}, typeError("%s: %v", what, err)
		}
		return coordinate.Name{Bytes: string(b)}, nil
	case 3:
		var s string
		if err := decMode.Unmarshal(raw, &s); err != nil {
			return coordinate.Name{}, typeError("%s: %v", what, err)
		}
		return coordinate.Name{Bytes: s, Text: true}, nil
	}
	return coordinate.Name{}, typeError("%s must be a string", what)
}

// decodeOptionalName is decodeName where null means "none".
func decodeOptionalName(raw cbor.RawMessage, what string) (*coordinate.Name, error) {
	if cborx.IsNull(raw) {
		return nil, nil
	}
	n, err := decodeName(raw, what)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// decodeList decodes an array or a tag-128 tuple into its raw elements.
func decodeList(raw cbor.RawMessage, what string) ([]cbor.RawMessage, error) {
	if items, ok := cborx.List(nil, raw); ok {
		return items, nil
	}
	if cborx.MajorOf(raw) == 6 {
		var tag cbor.RawTag
		if err := decMode.Unmarshal(raw, &tag); err != nil {
			return nil, typeError("%s: %v", what, err)
		}
		if tag.Number != tagTuple {
			return nil, typeError("%s must be a list or tuple, not tag %d", what, tag.Number)
		}
		raw = tag.Content
	}
	if cborx.MajorOf(raw) != 4 {
		return nil, typeError("%s must be a list or tuple", what)
	}
	var items []cbor.RawMessage
	if err := decMode.Unmarshal(raw, &items); err != nil {
		return nil, typeError("%s: %v", what, err)
	}
	return items, nil
}

// decodeNames decodes a list or tuple of strings. A lone string is taken
// as a list of that one name: Python iterated it, so `work_spec_names:
// 'abc'` meant 'a', 'b' and 'c' there, never what the caller wanted
// (docs/compat.md).
func decodeNames(raw cbor.RawMessage, what string) ([]coordinate.Name, error) {
	if isStringItem(raw) {
		n, err := decodeName(raw, what)
		if err != nil {
			return nil, err
		}
		return []coordinate.Name{n}, nil
	}
	items, err := decodeList(raw, what)
	if err != nil {
		return nil, err
	}
	names := make([]coordinate.Name, len(items))
	for i, it := range items {
		if names[i], err = decodeName(it, fmt.Sprintf("%s[%d]", what, i)); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// nameBytes returns the identity bytes of names.
func nameBytes(names []coordinate.Name) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n.Bytes
	}
	return out
}

// options is a decoded option map: keys (byte or text strings) mapped to
// their raw values.
type options map[string]cbor.RawMessage

// decodeOptions decodes an option map. Null is taken as an empty map.
func decodeOptions(raw cbor.RawMessage, what string) (options, error) {
	out := make(options, 4)
	if err := decodeOptionsInto(raw, what, out); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeOptionsInto is decodeOptions filling an empty map the caller made.
// A hot method passes a map it keeps local, which the compiler can then
// place on the stack: no allocation per call.
func decodeOptionsInto(raw cbor.RawMessage, what string, out options) error {
	if cborx.IsNull(raw) {
		return nil
	}
	if cborx.MajorOf(raw) != 5 {
		return typeError("%s must be a dict", what)
	}
	unusual := false
	if cborx.EachPair(raw, func(key, value []byte) {
		// Python looked options up by string name; other keys were
		// simply never read. A later duplicate wins, as in a dict.
		if k, _, ok := cborx.String(key); ok {
			out[optionName(k)] = value
		} else if mt := cborx.MajorOf(key); mt == 2 || mt == 3 {
			unusual = true // e.g. an indefinite-length key
		}
	}) && !unusual {
		return nil
	}
	var m map[any]cbor.RawMessage
	if err := decMode.Unmarshal(raw, &m); err != nil {
		return typeError("%s: %v", what, err)
	}
	clear(out)
	for k, v := range m {
		switch ks := k.(type) {
		case string:
			out[ks] = v
		case cbor.ByteString:
			out[string(ks)] = v
		default:
			// Python looked options up by string name; other keys were
			// simply never read.
		}
	}
	return nil
}

// optionName returns an option key as a string, without allocating for
// the option names the methods read.
func optionName(k []byte) string {
	switch string(k) {
	case "lease_time":
		return "lease_time"
	case "max_jobs":
		return "max_jobs"
	case "status":
		return "status"
	case "data":
		return "data"
	case "worker_id":
		return "worker_id"
	case "work_spec_names":
		return "work_spec_names"
	case "available_gb":
		return "available_gb"
	case "work_unit_keys":
		return "work_unit_keys"
	case "state":
		return "state"
	case "start":
		return "start"
	case "limit":
		return "limit"
	case "priority":
		return "priority"
	}
	return string(k)
}

// present reports whether the option is given and not null (Python's
// `options.get(k) is not None`).
func (o options) present(key string) bool {
	return !cborx.IsNull(o[key])
}

// decodeNumber decodes a number the way Python's float() read it (an
// integer, float or bool, or a string holding a number, as in
// `lease_time: "100"`), as float64. NaN, which no caller can use, and
// non-numeric values are errors naming the parameter.
func decodeNumber(raw cbor.RawMessage, what string) (float64, error) {
	if n, ok := cborx.Int(raw); ok {
		return float64(n), nil
	}
	if f, ok := cborx.Float64(raw); ok && !math.IsNaN(f) {
		return f, nil
	}
	f, ok := coordinate.PyFloat(raw)
	switch {
	case !ok && isStringItem(raw):
		return 0, valueError("%s: could not convert string to float: %s", what, pyReprRaw(raw))
	case !ok:
		return 0, typeError("%s must be a number", what)
	case math.IsNaN(f):
		return 0, valueError("%s must be a number, not NaN", what)
	}
	return f, nil
}

// decodePyInt decodes a count the way Python's int() read it: integers,
// bools, floats truncated toward zero (`max_jobs: 2.7` is 2), strings
// holding an integer (`max_jobs: "2"`). Other values are errors naming the
// parameter.
func decodePyInt(raw cbor.RawMessage, what string) (int64, error) {
	if n, ok := cborx.Int(raw); ok {
		return n, nil
	}
	n, ok := coordinate.PyInt(raw)
	switch {
	case !ok && isStringItem(raw):
		return 0, valueError("%s: invalid literal for int() with base 10: %s", what, pyReprRaw(raw))
	case !ok:
		return 0, typeError("%s must be an integer", what)
	}
	return n, nil
}

// isStringItem reports whether raw is a byte or text string.
func isStringItem(raw cbor.RawMessage) bool {
	mt := cborx.MajorOf(raw)
	return mt == 2 || mt == 3
}

// pyReprRaw renders a string parameter as Python's repr() did, for
// messages.
func pyReprRaw(raw cbor.RawMessage) string {
	n, err := decodeName(raw, "")
	if err != nil {
		return "<string>"
	}
	return pyReprName(n)
}

// decodeInt decodes an integer; an integral float is accepted too.
func decodeInt(raw cbor.RawMessage, what string) (int64, error) {
	if n, ok := cborx.Int(raw); ok {
		return n, nil
	}
	var v any
	if err := decMode.Unmarshal(raw, &v); err != nil {
		return 0, typeError("%s: %v", what, err)
	}
	switch x := v.(type) {
	case uint64:
		if x > math.MaxInt64 {
			return 0, valueError("%s is too large", what)
		}
		return int64(x), nil
	case int64:
		return x, nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<62 {
			return int64(x), nil
		}
		return 0, typeError("%s must be an integer", what)
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	}
	return 0, typeError("%s must be an integer", what)
}

// decodeTruth evaluates an option where Python tests a value's truth
// (coordinate.Truthy); a value that does not decode is a TypeError.
func decodeTruth(raw cbor.RawMessage, what string) (bool, error) {
	if cborx.IsNull(raw) {
		return false, nil
	}
	var v any
	if err := decMode.Unmarshal(raw, &v); err != nil {
		return false, typeError("%s: %v", what, err)
	}
	return coordinate.Truthy(raw), nil
}

// decodeStatuses decodes a status code or a list/tuple of them (the
// `state` option).
func decodeStatuses(raw cbor.RawMessage, what string) ([]coordinate.Status, error) {
	mt := cborx.MajorOf(raw)
	if mt == 4 || mt == 6 {
		items, err := decodeList(raw, what)
		if err != nil {
			return nil, err
		}
		out := make([]coordinate.Status, 0, len(items))
		for i, it := range items {
			n, err := decodeInt(it, fmt.Sprintf("%s[%d]", what, i))
			if err != nil {
				return nil, err
			}
			out = append(out, coordinate.Status(n))
		}
		return out, nil
	}
	n, err := decodeInt(raw, what)
	if err != nil {
		return nil, err
	}
	return []coordinate.Status{coordinate.Status(n)}, nil
}
