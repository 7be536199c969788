package coordinate

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/coordinated/coordinated/internal/cborx"
)

// This file holds the two conversions the Python daemon applied to values
// clients sent: int() and float(). They are the one place that decides which
// CBOR values those conversions accepted; the spec parser and the RPC layer
// (jobserver) both use them, so "Python would have coerced this" means the
// same thing everywhere (docs/compat.md, "Values Python converted").

// PyInt converts an encoded CBOR item the way Python 2's int() did:
// integers and bignums (saturated to the int64 range), bools (0, 1), finite
// floats (truncated toward zero, saturated), and byte or text strings that
// hold a base-10 integer with an optional sign and surrounding whitespace.
// ok is false where int() raised: null, NaN, infinities, other strings,
// lists, maps.
func PyInt(d []byte) (n int64, ok bool) {
	var v any
	if err := rawDecMode.Unmarshal(untuple(d), &v); err != nil {
		return 0, false
	}
	switch x := v.(type) {
	case uint64:
		if x > math.MaxInt64 {
			return math.MaxInt64, true
		}
		return int64(x), true
	case int64:
		return x, true
	case big.Int:
		return saturateBig(&x), true
	case *big.Int:
		return saturateBig(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, false
		}
		return saturateFloat(x), true
	case string:
		return parsePyInt(x)
	case []byte:
		return parsePyInt(string(x))
	}
	return 0, false
}

// PyFloat converts an encoded CBOR item the way Python 2's float() did:
// numbers, bools, and byte or text strings holding a decimal number
// (including "inf" and "nan"). ok is false where float() raised.
func PyFloat(d []byte) (f float64, ok bool) {
	var v any
	if err := rawDecMode.Unmarshal(untuple(d), &v); err != nil {
		return 0, false
	}
	switch x := v.(type) {
	case uint64:
		return float64(x), true
	case int64:
		return float64(x), true
	case big.Int:
		f, _ := new(big.Float).SetInt(&x).Float64()
		return f, true
	case *big.Int:
		f, _ := new(big.Float).SetInt(x).Float64()
		return f, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case float64:
		return x, true
	case string:
		return parsePyFloat(x)
	case []byte:
		return parsePyFloat(string(x))
	}
	return 0, false
}

// IsPyNumber reports whether d is a number as Python saw one (an integer,
// bignum, float or bool), as opposed to a string that float() could parse.
func IsPyNumber(d []byte) bool {
	h, err := cborx.ReadHead(d)
	if err != nil {
		return false
	}
	switch h.Major {
	case cborx.MajorUint, cborx.MajorNegInt:
		return true
	case cborx.MajorTag:
		return h.Arg == 2 || h.Arg == 3 // bignums
	case cborx.MajorSimple:
		if d[0] == cborx.False || d[0] == cborx.True {
			return true
		}
		_, ok := rawNumber(d)
		return ok
	}
	return false
}

// ClampInt32 saturates n to the int32 range, the range every backend stores
// control settings in.
func ClampInt32(n int64) int {
	return int(max(math.MinInt32, min(n, math.MaxInt32)))
}

func parsePyInt(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsRune(s, '_') {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return n, true
	}
	if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
		if strings.HasPrefix(s, "-") {
			return math.MinInt64, true
		}
		return math.MaxInt64, true
	}
	return 0, false
}

func parsePyFloat(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	// Python accepts neither hexadecimal floats nor digit separators.
	if s == "" || strings.ContainsAny(s, "_xXpP") {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
			return f, true // +-Inf or 0, as Python's float() rounds
		}
		return 0, false
	}
	return f, true
}

func saturateBig(x *big.Int) int64 {
	if x.IsInt64() {
		return x.Int64()
	}
	if x.Sign() < 0 {
		return math.MinInt64
	}
	return math.MaxInt64
}

func saturateFloat(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}
