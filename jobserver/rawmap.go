package jobserver

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/fxamacker/cbor/v2"
)

// rawPair is one key/value entry of an encoded CBOR map, both kept as
// their original bytes.
type rawPair struct {
	key, value cbor.RawMessage
}

var errNotMap = errors.New("not a CBOR map")

// splitMap returns the entries of an encoded CBOR map (definite or
// indefinite length) without decoding the values, so stored user data can
// be inspected or extended while every other byte stays as it was.
func splitMap(raw []byte) ([]rawPair, error) {
	if len(raw) == 0 || raw[0]>>5 != 5 {
		return nil, errNotMap
	}
	var (
		n      uint64
		rest   []byte
		indef  bool
		header = raw[0] & 0x1f
	)
	switch {
	case header < 24:
		n, rest = uint64(header), raw[1:]
	case header == 24 && len(raw) >= 2:
		n, rest = uint64(raw[1]), raw[2:]
	case header == 25 && len(raw) >= 3:
		n, rest = uint64(binary.BigEndian.Uint16(raw[1:])), raw[3:]
	case header == 26 && len(raw) >= 5:
		n, rest = uint64(binary.BigEndian.Uint32(raw[1:])), raw[5:]
	case header == 27 && len(raw) >= 9:
		n, rest = binary.BigEndian.Uint64(raw[1:]), raw[9:]
	case header == 31:
		indef, rest = true, raw[1:]
	default:
		return nil, errNotMap
	}
	if !indef && n > uint64(len(rest))/2 {
		return nil, errNotMap // each entry needs at least two bytes
	}
	pairs := make([]rawPair, 0, n)
	for i := uint64(0); indef || i < n; i++ {
		if indef && len(rest) > 0 && rest[0] == 0xff {
			break
		}
		var p rawPair
		var err error
		if rest, err = decMode.UnmarshalFirst(rest, &p.key); err != nil {
			return nil, err
		}
		if rest, err = decMode.UnmarshalFirst(rest, &p.value); err != nil {
			return nil, err
		}
		pairs = append(pairs, p)
	}
	return pairs, nil
}

// joinMap encodes entries as a definite-length CBOR map.
func joinMap(pairs []rawPair) cbor.RawMessage {
	size := 9
	for _, p := range pairs {
		size += len(p.key) + len(p.value)
	}
	out := appendHead(make([]byte, 0, size), 5, uint64(len(pairs)))
	for _, p := range pairs {
		out = append(out, p.key...)
		out = append(out, p.value...)
	}
	return out
}

// appendHead appends a CBOR head with the minimal length encoding.
func appendHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= math.MaxUint8:
		return append(b, m|24, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, m|27), n)
}

// encodeBytes encodes s as a CBOR byte string.
func encodeBytes(s string) cbor.RawMessage {
	return append(appendHead(make([]byte, 0, len(s)+9), 2, uint64(len(s))), s...)
}

// encodeFloat encodes f as a float64 (the only float width the Python side
// is sent).
func encodeFloat(f float64) cbor.RawMessage {
	return binary.BigEndian.AppendUint64([]byte{0xfb}, math.Float64bits(f))
}

// stringKey returns the string a map key holds when it is a byte or text
// string, and whether it is one.
func stringKey(key cbor.RawMessage) (string, bool) {
	mt := majorType(key)
	if mt != 2 && mt != 3 {
		return "", false
	}
	var s string
	if mt == 2 {
		var b []byte
		if decMode.Unmarshal(key, &b) != nil {
			return "", false
		}
		s = string(b)
	} else if decMode.Unmarshal(key, &s) != nil {
		return "", false
	}
	return s, true
}

// lookupKey returns the value stored under the string key name (byte or
// text) in an encoded map, or nil when data is not a map or lacks the key.
func lookupKey(data []byte, name string) cbor.RawMessage {
	pairs, err := splitMap(data)
	if err != nil {
		return nil
	}
	for _, p := range pairs {
		if k, ok := stringKey(p.key); ok && k == name {
			return p.value
		}
	}
	return nil
}
