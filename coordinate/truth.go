package coordinate

import "github.com/coordinated/coordinated/internal/cborx"

// Truthy evaluates a CBOR item the way Python's bool() evaluates the
// decoded value: false for null, false, zero (-0.0 too; NaN is true), and
// empty strings, lists, tuples and maps; true for anything else, false
// for a malformed item. Every rule and RPC option that Python tests for
// truth uses it.
func Truthy(d []byte) bool {
	if isNull(d) {
		return false
	}
	d = untuple(d)
	h, err := cborx.ReadHead(d)
	if err != nil {
		return false
	}
	switch h.Major {
	case cborx.MajorUint:
		return h.Arg != 0
	case cborx.MajorNegInt:
		return true
	case cborx.MajorBytes, cborx.MajorText:
		s, _ := rawString(d)
		return s.Bytes != ""
	case cborx.MajorArray, cborx.MajorMap:
		if h.Indefinite() {
			return len(d) > 1 && d[1] != cborx.Break
		}
		return h.Arg != 0
	case cborx.MajorSimple:
		if d[0] == cborx.False {
			return false
		}
		if f, ok := rawNumber(d); ok {
			return f != 0 // NaN is truthy, as in Python
		}
		return true
	}
	return true
}
