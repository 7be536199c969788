package pyvalue

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
)

// FromYAML converts a value decoded by gopkg.in/yaml.v3 into the Go value
// whose CBOR encoding is what Python 2 would have sent for the same YAML:
// ASCII strings as byte strings (str), others as text (unicode), mapping
// keys likewise (cbor.ByteString for str).
func FromYAML(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return String(x), nil
	case map[string]any:
		out := make(map[any]any, len(x))
		for k, e := range x {
			ev, err := FromYAML(e)
			if err != nil {
				return nil, err
			}
			out[StringKey(k)] = ev
		}
		return out, nil
	case map[any]any:
		out := make(map[any]any, len(x))
		for k, e := range x {
			kv, err := FromYAML(k)
			if err != nil {
				return nil, err
			}
			if b, ok := kv.([]byte); ok {
				kv = cbor.ByteString(b)
			}
			switch kv.(type) {
			case []any, map[any]any:
				return nil, fmt.Errorf("unsupported mapping key %v", k)
			}
			ev, err := FromYAML(e)
			if err != nil {
				return nil, err
			}
			out[kv] = ev
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			ev, err := FromYAML(e)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case time.Time:
		// PyYAML would build a datetime, which CBOR-RPC cannot carry;
		// send the text as written.
		return String(x.Format(time.RFC3339Nano)), nil
	case nil, bool, int, int64, uint64, float64:
		return x, nil
	}
	return nil, fmt.Errorf("unsupported YAML value %T", v)
}

// String types a YAML string as Python 2 did: str for ASCII, unicode
// otherwise.
func String(s string) any {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return s
		}
	}
	return []byte(s)
}

// StringKey is String for a map key: cbor.ByteString for str.
func StringKey(s string) any {
	if b, ok := String(s).([]byte); ok {
		return cbor.ByteString(b)
	}
	return s
}
