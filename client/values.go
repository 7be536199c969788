package client

import (
	"fmt"
	"math"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
)

// Map is an options dict as the Python 2 client sends it: byte-string keys.
type Map = map[cbor.ByteString]any

// Work unit statuses (docs/spec/PROTOCOL.md §6).
const (
	Available = 1
	Blocked   = 2
	Pending   = 3
	Finished  = 4
	Failed    = 5
)

// Work spec statuses for control_work_spec.
const (
	Runnable = 1
	Paused   = 2
)

// StatusNames maps status codes to the names the CLI uses.
var StatusNames = map[int]string{
	Available: "available", Blocked: "blocked", Pending: "pending",
	Finished: "finished", Failed: "failed",
}

// StatusCode returns the code of a status name, or 0.
func StatusCode(name string) int {
	for code, n := range StatusNames {
		if n == name {
			return code
		}
	}
	return 0
}

// InBandError is a (false, message) answer: the call reached the server,
// which refused it without raising.
type InBandError struct {
	Method  string
	Message string
}

func (e *InBandError) Error() string { return e.Method + ": " + e.Message }

// Text returns a byte or text string's contents.
func Text(v any) (string, bool) {
	switch x := v.(type) {
	case []byte:
		return string(x), true
	case string:
		return x, true
	case cbor.ByteString:
		return string(x), true
	}
	return "", false
}

// Int returns an integer (or integral float) result value.
func Int(v any) (int64, bool) {
	switch x := v.(type) {
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	}
	return 0, false
}

// Float returns a numeric result value as float64.
func Float(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	if n, ok := Int(v); ok {
		return float64(n), true
	}
	return 0, false
}

// List returns the elements of an array or tuple.
func List(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case cborrpc.Tuple:
		return x, true
	}
	return nil, false
}

// Get looks up a string key in a decoded map, whether the key was sent as
// a byte or a text string.
func Get(m any, key string) (any, bool) {
	mm, ok := m.(map[any]any)
	if !ok {
		return nil, false
	}
	if v, ok := mm[cbor.ByteString(key)]; ok {
		return v, true
	}
	v, ok := mm[key]
	return v, ok
}

// pair unpacks a (value, message) result.
func pair(method string, result any) (value any, msg string, err error) {
	l, ok := List(result)
	if !ok || len(l) != 2 {
		return nil, "", fmt.Errorf("%s: expected a (value, message) pair, got %v", method, result)
	}
	if l[1] != nil {
		msg, _ = Text(l[1])
	}
	return l[0], msg, nil
}

// keyList encodes unit keys as given ([]byte or string) in a list.
func keyList(keys []any) []any {
	out := make([]any, len(keys))
	copy(out, keys)
	return out
}

// Bytes is a Python 2 str: a CBOR byte string.
func Bytes(s string) []byte { return []byte(s) }

// nameList encodes names as byte strings.
func nameList(names []string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = []byte(n)
	}
	return out
}
