package cborrpc

import (
	"fmt"
	"math"
	"reflect"

	"github.com/fxamacker/cbor/v2"
)

// TagTuple is the CBOR tag of a Python tuple (PROTOCOL §5.1).
const TagTuple = 128

// cborModes holds the fxamacker modes configured for this protocol. They are
// built once and immutable.
type cborModes struct {
	enc cbor.EncMode
	dec cbor.DecMode
}

var modes = mustModes()

func mustModes() cborModes {
	c, err := newModes()
	if err != nil {
		panic("cborrpc: building CBOR modes: " + err.Error())
	}
	return c
}

func newModes() (cborModes, error) {
	tags := cbor.NewTagSet()
	if err := tags.Add(
		cbor.TagOptions{EncTag: cbor.EncTagRequired, DecTag: cbor.DecTagRequired},
		reflect.TypeOf(Tuple(nil)), TagTuple,
	); err != nil {
		return cborModes{}, err
	}
	enc, err := cbor.EncOptions{
		Sort:          cbor.SortBytewiseLexical, // deterministic, and `id` < `result`/`error`
		ShortestFloat: cbor.ShortestFloatNone,   // float64 stays FB (PROTOCOL §2.2)
		NaNConvert:    cbor.NaNConvertNone,
		InfConvert:    cbor.InfConvertNone,
		IndefLength:   cbor.IndefLengthForbidden,
		BigIntConvert: cbor.BigIntConvertShortest,
		TimeTag:       cbor.EncTagNone,
	}.EncModeWithTags(tags)
	if err != nil {
		return cborModes{}, err
	}
	dec, err := cbor.DecOptions{
		MaxNestedLevels:  MaxNestingDepth + 1,
		MaxArrayElements: MaxContainerItems,
		MaxMapPairs:      MaxContainerItems,
		IndefLength:      cbor.IndefLengthAllowed,
		MapKeyByteString: cbor.MapKeyByteStringAllowed,
		IntDec:           cbor.IntDecConvertNone,
	}.DecModeWithTags(tags)
	if err != nil {
		return cborModes{}, err
	}
	return cborModes{enc: enc, dec: dec}, nil
}

// EncMode returns the encoder used for results: Tuple as tag 128, sorted
// map keys, float64 kept as float64, definite lengths.
func EncMode() cbor.EncMode { return modes.enc }

// DecMode returns a decoder with this package's limits that decodes tag 128
// into Tuple. Decoding into `any` yields []byte for byte strings, string for
// text, map[any]any with cbor.ByteString for byte-string keys.
func DecMode() cbor.DecMode { return modes.dec }

// appendValue appends the CBOR encoding of v. Common result shapes are
// encoded directly; anything else goes through EncMode.
func appendValue(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, 0xF6), nil
	case bool:
		if x {
			return append(dst, 0xF5), nil
		}
		return append(dst, 0xF4), nil
	case int:
		return appendInt(dst, int64(x)), nil
	case int64:
		return appendInt(dst, x), nil
	case int32:
		return appendInt(dst, int64(x)), nil
	case uint64:
		return appendHead(dst, majorUint, x), nil
	case uint32:
		return appendHead(dst, majorUint, uint64(x)), nil
	case uint:
		return appendHead(dst, majorUint, uint64(x)), nil
	case float64:
		return appendFloat64(dst, x), nil
	case float32:
		return appendFloat64(dst, float64(x)), nil // never FA on the wire
	case string:
		return append(appendHead(dst, majorText, uint64(len(x))), x...), nil
	case []byte:
		return append(appendHead(dst, majorBytes, uint64(len(x))), x...), nil
	case cbor.ByteString:
		return append(appendHead(dst, majorBytes, uint64(len(x))), x...), nil
	case cbor.RawMessage:
		return appendRaw(dst, x)
	case Tuple:
		dst = append(dst, 0xD8, TagTuple)
		return appendArray(dst, x)
	case []any:
		return appendArray(dst, x)
	case []cbor.RawMessage:
		dst = appendHead(dst, majorArray, uint64(len(x)))
		var err error
		for _, item := range x {
			if dst, err = appendRaw(dst, item); err != nil {
				return nil, err
			}
		}
		return dst, nil
	}
	b, err := modes.enc.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cborrpc: encoding %T: %w", v, err)
	}
	return append(dst, b...), nil
}

// appendRaw copies an encoded item verbatim (empty means null) after
// checking it is exactly one acceptable item: a corrupt one would
// desynchronise every later response on the connection.
func appendRaw(dst []byte, raw cbor.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return append(dst, 0xF6), nil
	}
	if n, err := skipItem(raw, 0); err != nil || n != len(raw) {
		if err == nil {
			err = malformed("%d bytes after the item", len(raw)-n)
		}
		return nil, fmt.Errorf("cborrpc: raw CBOR value is not one valid item: %w", err)
	}
	return append(dst, raw...), nil
}

func appendArray(dst []byte, items []any) ([]byte, error) {
	dst = appendHead(dst, majorArray, uint64(len(items)))
	var err error
	for _, item := range items {
		if dst, err = appendValue(dst, item); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// appendHead appends a head with the shortest argument encoding.
func appendHead(dst []byte, major byte, arg uint64) []byte {
	m := major << 5
	switch {
	case arg < 24:
		return append(dst, m|byte(arg))
	case arg <= 0xFF:
		return append(dst, m|24, byte(arg))
	case arg <= 0xFFFF:
		return append(dst, m|25, byte(arg>>8), byte(arg))
	case arg <= 0xFFFFFFFF:
		return append(dst, m|26, byte(arg>>24), byte(arg>>16), byte(arg>>8), byte(arg))
	}
	return append(dst, m|27, byte(arg>>56), byte(arg>>48), byte(arg>>40), byte(arg>>32),
		byte(arg>>24), byte(arg>>16), byte(arg>>8), byte(arg))
}

func appendInt(dst []byte, v int64) []byte {
	if v >= 0 {
		return appendHead(dst, majorUint, uint64(v))
	}
	return appendHead(dst, majorNegInt, uint64(-(v + 1)))
}

func appendFloat64(dst []byte, f float64) []byte {
	bits := math.Float64bits(f)
	return append(dst, 0xFB, byte(bits>>56), byte(bits>>48), byte(bits>>40), byte(bits>>32),
		byte(bits>>24), byte(bits>>16), byte(bits>>8), byte(bits))
}
