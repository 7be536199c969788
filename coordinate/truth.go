package coordinate

import (
	"bytes"

	"github.com/coordinated/coordinated/internal/cborx"
)

// Truthy evaluates a CBOR item the way Python's bool() evaluates the
// decoded value: false for null, false, zero (-0.0 and a bignum zero too;
// NaN is true), and empty strings, lists, tuples and maps; true for
// anything else, false for a malformed item. Embedded CBOR (tag 24) has
// the truth of the item it holds, as Python's tag mapper decodes it in
// place. Every rule and RPC option that Python tests for truth uses it.
func Truthy(d []byte) bool { return truthy(d, 0) }

// maxEmbedding bounds how deep embedded CBOR is followed: an item nested
// deeper is malformed (Python's decoder gives up at its recursion limit),
// so a crafted request cannot exhaust the stack.
const maxEmbedding = 64

func truthy(d []byte, depth int) bool {
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
	case cborx.MajorTag:
		return taggedTruthy(h, d[h.Size:], depth)
	}
	return true
}

// Bignum tags (RFC 8949 §3.4.3): Python decodes them to a long.
const (
	tagPositiveBignum = 2
	tagNegativeBignum = 3
)

// taggedTruthy is Truthy of a tagged item whose head is h and whose
// content is the item c.
func taggedTruthy(h cborx.Head, c []byte, depth int) bool {
	switch h.Arg {
	case cborx.TagEmbedded:
		inner, text, ok := cborx.StringValue(c)
		return ok && !text && depth < maxEmbedding && truthy([]byte(inner), depth+1)
	case tagPositiveBignum, tagNegativeBignum:
		// Python's decoder refuses a chunked magnitude: cborx.String
		// does too.
		mag, text, ok := cborx.String(c)
		if !ok || text {
			return false
		}
		// -1-n is never zero; n is zero when all its bytes are.
		return h.Arg == tagNegativeBignum || len(bytes.TrimLeft(mag, "\x00")) > 0
	}
	return true
}
