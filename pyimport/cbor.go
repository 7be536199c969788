package pyimport

import (
	"fmt"
	"math"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// decMode decodes the Python daemon's CBOR. Python 2 `str` values are CBOR
// byte strings, so maps are keyed by byte strings; queues may be large.
var decMode = func() cbor.DecMode {
	dm, err := cbor.DecOptions{
		MaxNestedLevels:    1024,
		MaxArrayElements:   math.MaxInt32,
		MaxMapPairs:        math.MaxInt32,
		ByteStringToString: cbor.ByteStringToStringAllowed,
		MapKeyByteString:   cbor.MapKeyByteStringAllowed,
		DupMapKey:          cbor.DupMapKeyQuiet,
	}.DecMode()
	if err != nil {
		panic(err)
	}
	return dm
}()

// item is one CBOR data item of a Python file.
type item = cbor.RawMessage

// major is the CBOR major type of an item.
func major(v item) byte {
	if len(v) == 0 {
		return 0xff
	}
	return v[0] >> 5
}

func isNull(v item) bool { return len(v) == 1 && (v[0] == 0xf6 || v[0] == 0xf7) }

// array decodes an array item.
func array(v item) ([]item, bool) {
	if major(v) != 4 {
		return nil, false
	}
	var out []item
	if decMode.Unmarshal(v, &out) != nil {
		return nil, false
	}
	return out, true
}

// stringMap decodes a map's entries keyed by byte or text strings. Other
// keys (a Python dictionary may have integer keys: set_work_spec stores
// any) are left out, as a lookup by string never finds them.
func stringMap(v item) (map[string]item, bool) {
	if major(v) != 5 {
		return nil, false
	}
	var raw map[any]item
	if decMode.Unmarshal(v, &raw) != nil {
		return nil, false
	}
	out := make(map[string]item, len(raw))
	for k, val := range raw {
		switch k := k.(type) {
		case string:
			out[k] = val
		case cbor.ByteString:
			out[string(k)] = val
		}
	}
	return out, true
}

// name decodes a byte or text string, remembering which it was.
func name(v item) (coordinate.Name, bool) {
	var s string
	switch major(v) {
	case 2, 3:
		if decMode.Unmarshal(v, &s) != nil {
			return coordinate.Name{}, false
		}
		return coordinate.Name{Bytes: s, Text: major(v) == 3}, true
	}
	return coordinate.Name{}, false
}

// optName is name, or nil for null.
func optName(v item) (*coordinate.Name, bool) {
	if isNull(v) {
		return nil, true
	}
	n, ok := name(v)
	return &n, ok
}

// number decodes an integer or float (not null).
func number(v item) (float64, bool) {
	switch major(v) {
	case 0, 1:
		var n int64
		if decMode.Unmarshal(v, &n) != nil {
			return 0, false
		}
		return float64(n), true
	case 7:
		var f float64
		if decMode.Unmarshal(v, &f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

// integer decodes an integer item.
func integer(v item) (int64, bool) {
	var n int64
	if (major(v) != 0 && major(v) != 1) || decMode.Unmarshal(v, &n) != nil {
		return 0, false
	}
	return n, true
}

// boolean decodes true or false (Python also wrote 0/1 for flags set by
// hand, which count as well).
func boolean(v item) (bool, bool) {
	switch {
	case len(v) == 1 && v[0] == 0xf5:
		return true, true
	case len(v) == 1 && v[0] == 0xf4:
		return false, true
	}
	if n, ok := integer(v); ok {
		return n != 0, true
	}
	return false, false
}

// describe names an item's kind for error messages.
func describe(v item) string {
	if isNull(v) {
		return "null"
	}
	switch major(v) {
	case 0, 1:
		return "an integer"
	case 2:
		return "a byte string"
	case 3:
		return "a text string"
	case 4:
		return "an array"
	case 5:
		return "a map"
	case 6:
		return "a tagged item"
	case 7:
		if len(v) == 1 && (v[0] == 0xf4 || v[0] == 0xf5) {
			return "a boolean"
		}
		return "a float"
	}
	return fmt.Sprintf("item 0x%x", v[0])
}

// pyFloat reads a finite number as Python's float() did
// (coordinate.PyFloat: a numeric string parsed; null is not one); NaN and
// infinities are refused too.
func pyFloat(v item) (float64, bool) {
	f, ok := coordinate.PyFloat(v)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// describeStatus names a unit status item for error messages: the number
// with Python's name for it, else describeInteger.
func describeStatus(v item) string {
	n, ok := integer(v)
	names := map[int64]string{1: "AVAILABLE", 2: "BLOCKED", 3: "PENDING", 4: "FINISHED", 5: "FAILED"}
	if name, known := names[n]; ok && known {
		return fmt.Sprintf("%d (%s)", n, name)
	}
	return describeInteger(v)
}

// describeInteger is the integer itself, or describe of anything else.
func describeInteger(v item) string {
	if n, ok := integer(v); ok {
		return fmt.Sprint(n)
	}
	return describe(v)
}
