package coordinate

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"

	"github.com/fxamacker/cbor/v2"
)

// This file holds the small CBOR reader the shared rules use to look inside
// user-supplied maps and lists (work-spec definitions, add_work_units meta
// maps, chained `output` values) without converting user data: values are
// kept as raw encoded items so whatever is passed on (a chained unit's data)
// round-trips byte for byte.

// rawDecMode decodes generically with generous limits: the items we walk
// are user data, and only well-formedness matters here.
var rawDecMode = func() cbor.DecMode {
	dm, err := cbor.DecOptions{
		MaxNestedLevels:  65535,
		MaxArrayElements: 2147483647,
		MaxMapPairs:      2147483647,
		IndefLength:      cbor.IndefLengthAllowed,
		DupMapKey:        cbor.DupMapKeyQuiet,
		MapKeyByteString: cbor.MapKeyByteStringAllowed,
	}.DecMode()
	if err != nil {
		panic(fmt.Sprintf("coordinate: CBOR decode options: %v", err))
	}
	return dm
}()

// CBOR major types.
const (
	majorUint   = 0
	majorNegint = 1
	majorBytes  = 2
	majorText   = 3
	majorArray  = 4
	majorMap    = 5
	majorTag    = 6
	majorSimple = 7
)

// tagTuple is the tag the Python encoder puts around tuples.
const tagTuple = 128

var errNotWellFormed = errors.New("not well-formed CBOR")

// itemHead reads the initial byte and argument of the item at the start of
// d. indefinite is true for an indefinite-length string, array or map.
func itemHead(d []byte) (major byte, arg uint64, headLen int, indefinite bool, err error) {
	if len(d) == 0 {
		return 0, 0, 0, false, errNotWellFormed
	}
	major = d[0] >> 5
	ai := d[0] & 0x1f
	switch {
	case ai < 24:
		return major, uint64(ai), 1, false, nil
	case ai == 31:
		return major, 0, 1, true, nil
	case ai > 27:
		return 0, 0, 0, false, errNotWellFormed
	}
	n := 1 << (ai - 24) // 1, 2, 4 or 8 bytes of argument
	if len(d) < 1+n {
		return 0, 0, 0, false, errNotWellFormed
	}
	for _, b := range d[1 : 1+n] {
		arg = arg<<8 | uint64(b)
	}
	return major, arg, 1 + n, false, nil
}

// firstItem splits d into its first complete data item and the rest.
func firstItem(d []byte) (cbor.RawMessage, []byte, error) {
	var raw cbor.RawMessage
	rest, err := rawDecMode.UnmarshalFirst(d, &raw)
	if err != nil {
		return nil, nil, err
	}
	return raw, rest, nil
}

// isNull reports whether d is absent, CBOR null or CBOR undefined.
func isNull(d []byte) bool {
	return len(d) == 0 || (len(d) == 1 && (d[0] == 0xf6 || d[0] == 0xf7))
}

// untuple strips a tag-128 wrapper, returning the wrapped item.
func untuple(d []byte) []byte {
	major, arg, n, _, err := itemHead(d)
	if err == nil && major == majorTag && arg == tagTuple {
		return d[n:]
	}
	return d
}

// rawPair is one key/value entry of a CBOR map, both still encoded.
type rawPair struct {
	Key, Value cbor.RawMessage
}

// rawMap returns the entries of a CBOR map in encoded order; ok is false
// when d is not a map.
func rawMap(d []byte) (pairs []rawPair, ok bool, err error) {
	major, arg, n, indef, err := itemHead(d)
	if err != nil || major != majorMap {
		return nil, false, err
	}
	rest := d[n:]
	for i := uint64(0); indef || i < arg; i++ {
		if indef {
			if len(rest) == 0 {
				return nil, true, errNotWellFormed
			}
			if rest[0] == 0xff {
				break
			}
		}
		var p rawPair
		if p.Key, rest, err = firstItem(rest); err != nil {
			return nil, true, err
		}
		if p.Value, rest, err = firstItem(rest); err != nil {
			return nil, true, err
		}
		pairs = append(pairs, p)
	}
	return pairs, true, nil
}

// rawList returns the elements of a CBOR array, or of an array wrapped in
// tag 128; ok is false when d is neither.
func rawList(d []byte) (elems []cbor.RawMessage, ok bool, err error) {
	d = untuple(d)
	major, arg, n, indef, err := itemHead(d)
	if err != nil || major != majorArray {
		return nil, false, err
	}
	rest := d[n:]
	for i := uint64(0); indef || i < arg; i++ {
		if indef {
			if len(rest) == 0 {
				return nil, true, errNotWellFormed
			}
			if rest[0] == 0xff {
				break
			}
		}
		var e cbor.RawMessage
		if e, rest, err = firstItem(rest); err != nil {
			return nil, true, err
		}
		elems = append(elems, e)
	}
	return elems, true, nil
}

// stringKeyed indexes a CBOR map's entries by string key: byte-string and
// text-string keys with the same bytes are the same key (the later entry
// wins). Entries with other key types are left out.
func stringKeyed(pairs []rawPair) map[string]cbor.RawMessage {
	m := make(map[string]cbor.RawMessage, len(pairs))
	for _, p := range pairs {
		if k, ok := rawString(p.Key); ok {
			m[k.Bytes] = p.Value
		}
	}
	return m
}

// rawString decodes a byte or text string.
func rawString(d []byte) (Name, bool) {
	major, _, _, _, err := itemHead(d)
	if err != nil || (major != majorBytes && major != majorText) {
		return Name{}, false
	}
	var v any
	if err := rawDecMode.Unmarshal(d, &v); err != nil {
		return Name{}, false
	}
	switch s := v.(type) {
	case string:
		return Name{Bytes: s, Text: true}, true
	case []byte:
		return Name{Bytes: string(s)}, true
	}
	return Name{}, false
}

// rawNumber decodes an integer, bignum or float as float64.
func rawNumber(d []byte) (float64, bool) {
	var v any
	if err := rawDecMode.Unmarshal(d, &v); err != nil {
		return 0, false
	}
	switch n := v.(type) {
	case uint64:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case big.Int:
		f, _ := new(big.Float).SetInt(&n).Float64()
		return f, true
	case *big.Int:
		f, _ := new(big.Float).SetInt(n).Float64()
		return f, true
	}
	return 0, false
}

// describe renders a raw item briefly for error messages.
func describe(d []byte) string {
	if s, ok := rawString(d); ok {
		if len(s.Bytes) > 40 {
			return strconv.Quote(s.Bytes[:40]) + "..."
		}
		return strconv.Quote(s.Bytes)
	}
	diag, err := cbor.Diagnose(d)
	if err != nil {
		return "malformed CBOR"
	}
	if len(diag) > 40 {
		diag = diag[:40] + "..."
	}
	return diag
}

// rawTruthy evaluates d the way Python's bool() would: false for null,
// false, zero, and empty strings, lists and maps.
func rawTruthy(d []byte) bool {
	if isNull(d) {
		return false
	}
	d = untuple(d)
	major, arg, _, indef, err := itemHead(d)
	if err != nil {
		return false
	}
	switch major {
	case majorUint, majorNegint:
		if major == majorNegint {
			return true
		}
		return arg != 0
	case majorBytes, majorText:
		s, _ := rawString(d)
		return s.Bytes != ""
	case majorArray, majorMap:
		if indef {
			return len(d) > 1 && d[1] != 0xff
		}
		return arg != 0
	case majorSimple:
		if d[0] == 0xf4 {
			return false
		}
		if f, ok := rawNumber(d); ok {
			return f != 0 // NaN is truthy, as in Python
		}
		return true
	}
	return true
}
