package web

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/textcut"
)

// Unit data, worker modes and the like are opaque CBOR. The dashboard
// shows them as indented JSON-like text: byte strings that are UTF-8 as
// strings, others as hex; map keys as strings.

var decMode, _ = cbor.DecOptions{
	DefaultMapType:  nil,
	MaxNestedLevels: 64,
}.DecMode()

func decodeData(d coordinate.Data) (any, error) {
	var v any
	if err := decMode.Unmarshal(d, &v); err != nil {
		return nil, err
	}
	return plain(v), nil
}

// plain turns a decoded CBOR item into values encoding/json can print.
func plain(v any) any {
	switch x := v.(type) {
	case []byte:
		return bytesText(string(x))
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[keyString(k)] = plain(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = plain(val)
		}
		return out
	case cbor.Tag:
		return map[string]any{fmt.Sprintf("tag(%d)", x.Number): plain(x.Content)}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprint(x)
		}
	case float32:
		return plain(float64(x))
	}
	return v
}

// bytesText shows a byte string (a data value, a map key, a spec name in
// a label) as text when it is UTF-8, otherwise as hexText.
func bytesText(b string) string {
	if utf8.ValidString(b) {
		return b
	}
	return hexText(b)
}

// hexText is bytes in hex as CBOR's diagnostic notation writes them,
// h'...': the dashboard's and /metrics' form for bytes that are not text.
func hexText(b string) string { return fmt.Sprintf("h'%x'", b) }

func keyString(k any) string {
	switch x := k.(type) {
	case string:
		return x
	case []byte:
		return bytesText(string(x))
	}
	b, err := json.Marshal(plain(k))
	if err != nil {
		return fmt.Sprint(k)
	}
	return string(b)
}

// dataText renders d for display.
func dataText(d coordinate.Data) string {
	if len(d) == 0 {
		return ""
	}
	v, err := decodeData(d)
	if err != nil {
		return fmt.Sprintf("(undecodable CBOR: %v) %x", err, []byte(d))
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// dataField returns the value of a string key of a CBOR map (nil when d is
// not a map or has no such key).
func dataField(d coordinate.Data, key string) any {
	v, err := decodeData(d)
	if err != nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	return m[key]
}

// traceback is a unit's failure traceback ("" when none).
func traceback(d coordinate.Data) string {
	switch t := dataField(d, "traceback").(type) {
	case string:
		return t
	case nil:
		return ""
	default:
		b, _ := json.MarshalIndent(t, "", "  ")
		return string(b)
	}
}

// outputs lists the keys of the chained units a unit's data names (its
// "output" entry: a list of keys or key/data pairs, or a map by key).
func outputs(d coordinate.Data) []string {
	var keys []string
	switch o := dataField(d, "output").(type) {
	case []any:
		for _, item := range o {
			switch x := item.(type) {
			case string:
				keys = append(keys, x)
			case []any:
				if len(x) > 0 {
					keys = append(keys, keyString(x[0]))
				}
			}
		}
	case map[string]any:
		for k := range o {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	}
	return keys
}

// modeLabel names a worker mode: the string when it is one, else "none"
// for null and "other".
func modeLabel(mode coordinate.Data) string {
	v, err := decodeData(mode)
	if err != nil {
		return "other"
	}
	switch x := v.(type) {
	case nil:
		return "none"
	case string:
		if x == "" || strings.HasPrefix(x, "_") {
			return "other"
		}
		return textcut.Prefix(x, 64) // a label value must stay UTF-8
	}
	return "other"
}

// modeText shows a worker mode: a string as it is, anything else as data.
func modeText(mode coordinate.Data) string {
	if v, err := decodeData(mode); err == nil {
		if s, ok := v.(string); ok {
			return s
		}
	}
	return dataText(mode)
}
