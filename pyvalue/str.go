package pyvalue

import (
	"math/big"
	"strconv"
)

// WireStr is Python 2 str() (and '{0}'.format()) of a value as a Python 2
// program holds it after decoding it from CBOR: a str or unicode as its
// text, an integer with every digit and no L, a float as FloatStr, True,
// False, None; a list, tuple or dict as its WireRepr (str() of a
// container shows its items' repr, integers as longs).
func WireStr(v any) string {
	if s, ok := Text(v); ok {
		return s
	}
	switch x := v.(type) {
	case uint64:
		return strconv.FormatUint(x, 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case big.Int:
		return x.String()
	case *big.Int:
		return x.String()
	case float64:
		return FloatStr(x)
	case float32:
		return FloatStr(float64(x))
	}
	return WireRepr(v) // None, True, False and containers
}
