package coordinate

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/internal/cborx"
	"github.com/coordinated/coordinated/internal/textcut"
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

var errNotWellFormed = errors.New("not well-formed CBOR")

// isNull reports whether d is absent, CBOR null or CBOR undefined.
func isNull(d []byte) bool { return cborx.IsNull(d) }

// untuple strips a tag-128 wrapper, returning the wrapped item.
func untuple(d []byte) []byte {
	inner, _ := cborx.Untuple(d)
	return inner
}

// rawMap returns the entries of a CBOR map in encoded order; ok is false
// when d is not a map, err set when it is a malformed one.
func rawMap(d []byte) (pairs []cborx.Pair, ok bool, err error) {
	if cborx.MajorOf(d) != cborx.MajorMap {
		return nil, false, nil
	}
	pairs, ok = cborx.Pairs(d)
	if !ok {
		return nil, true, errNotWellFormed
	}
	return pairs, true, nil
}

// rawList returns the elements of a CBOR array, or of an array wrapped in
// tag 128; ok is false when d is neither, err set when it is malformed.
func rawList(d []byte) (elems []cbor.RawMessage, ok bool, err error) {
	if cborx.MajorOf(untuple(d)) != cborx.MajorArray {
		return nil, false, nil
	}
	elems, ok = cborx.List(nil, d)
	if !ok {
		return nil, true, errNotWellFormed
	}
	return elems, true, nil
}

// stringKeyed indexes a CBOR map's entries by string key: byte-string and
// text-string keys with the same bytes are the same key (the later entry
// wins). Entries with other key types are left out.
func stringKeyed(pairs []cborx.Pair) map[string]cbor.RawMessage {
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
	s, text, ok := cborx.StringValue(d)
	if !ok {
		return Name{}, false
	}
	return Name{Bytes: s, Text: text}, true
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
			return strconv.Quote(textcut.Prefix(s.Bytes, 40)) + "..."
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
