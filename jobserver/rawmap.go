package jobserver

import (
	"errors"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/internal/cborx"
)

// Stored user data (definitions, worker data) is inspected or extended as
// encoded map entries, so every byte not changed stays as it was.

var errNotMap = errors.New("not a CBOR map")

// splitMap returns the entries of an encoded CBOR map (definite or
// indefinite length) without decoding the values.
func splitMap(raw []byte) ([]cborx.Pair, error) {
	pairs, ok := cborx.Pairs(raw)
	if !ok {
		return nil, errNotMap
	}
	return pairs, nil
}

// joinMap encodes entries as a definite-length CBOR map.
func joinMap(pairs []cborx.Pair) cbor.RawMessage {
	size := 9
	for _, p := range pairs {
		size += len(p.Key) + len(p.Value)
	}
	return cborx.AppendMap(make([]byte, 0, size), pairs)
}

// encodeBytes encodes s as a CBOR byte string.
func encodeBytes(s string) cbor.RawMessage {
	return cborx.AppendBytes(make([]byte, 0, len(s)+9), s)
}

// encodeFloat encodes f as a float64 (the only float width the Python side
// is sent).
func encodeFloat(f float64) cbor.RawMessage { return cborx.AppendFloat64(nil, f) }

// stringKey returns the string a map key holds when it is a byte or text
// string, and whether it is one.
func stringKey(key cbor.RawMessage) (string, bool) {
	s, _, ok := cborx.StringValue(key)
	return s, ok
}

// lookupKey returns the value stored under the string key name (byte or
// text) in an encoded map (the first entry under it), or nil when data is not a map or lacks the key.
func lookupKey(data []byte, name string) cbor.RawMessage {
	var found cbor.RawMessage
	cborx.EachPair(data, func(k, v []byte) {
		if s, ok := stringKey(k); ok && s == name && found == nil {
			found = v
		}
	})
	return found
}
