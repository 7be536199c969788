package jobserver

import (
	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/internal/cborx"
)

// The parameter decoders in params.go read raw items the cborrpc layer has
// already validated with internal/cborx, so the common shapes (definite
// strings, small integers, float64, arrays and maps of those) are read
// without a generic decode; anything unusual (indefinite-length strings,
// bignums, half floats) makes a reader report !ok and the caller falls
// back to the general fxamacker decoder, which also produces the error
// messages. These names are the decoders' vocabulary; the mechanism is
// cborx's.

// stringItem returns the contents of a definite-length byte string (text
// false) or valid UTF-8 text string (text true) item, without copying.
func stringItem(b []byte) (s []byte, text, ok bool) { return cborx.String(b) }

// listItems returns the elements of an array, or of an array wrapped in
// the tuple tag, as sub-slices of b; ok is false for anything else.
func listItems(b []byte) ([]cbor.RawMessage, bool) { return cborx.List(nil, b) }

// appendListItems is listItems appending to items.
func appendListItems(items []cbor.RawMessage, b []byte) ([]cbor.RawMessage, bool) {
	return cborx.List(items, b)
}

// eachMapEntry calls fn with the raw key and value of every entry of the
// map at the start of b, in encoded order; ok is false when b is not a
// well-formed map.
func eachMapEntry(b []byte, fn func(key, value []byte)) bool {
	return cborx.EachPair(b, fn)
}

// intItem reads an integer item that fits in an int64.
func intItem(b []byte) (int64, bool) { return cborx.Int(b) }

// float64Item reads a double-precision float item.
func float64Item(b []byte) (float64, bool) { return cborx.Float64(b) }
