package cborrpc

import (
	"fmt"
	"reflect"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/internal/cborx"
)

// TagTuple is the CBOR tag of a Python tuple (PROTOCOL §5.1).
const TagTuple = cborx.TagTuple

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
		return cborx.AppendInt(dst, int64(x)), nil
	case int64:
		return cborx.AppendInt(dst, x), nil
	case int32:
		return cborx.AppendInt(dst, int64(x)), nil
	case uint64:
		return cborx.AppendHead(dst, cborx.MajorUint, x), nil
	case uint32:
		return cborx.AppendHead(dst, cborx.MajorUint, uint64(x)), nil
	case uint:
		return cborx.AppendHead(dst, cborx.MajorUint, uint64(x)), nil
	case float64:
		return cborx.AppendFloat64(dst, x), nil
	case float32:
		return cborx.AppendFloat64(dst, float64(x)), nil // never FA on the wire
	case string:
		return append(cborx.AppendHead(dst, cborx.MajorText, uint64(len(x))), x...), nil
	case []byte:
		return append(cborx.AppendHead(dst, cborx.MajorBytes, uint64(len(x))), x...), nil
	case cbor.ByteString:
		return append(cborx.AppendHead(dst, cborx.MajorBytes, uint64(len(x))), x...), nil
	case cbor.RawMessage:
		return appendRaw(dst, x)
	case Tuple:
		dst = append(dst, 0xD8, TagTuple)
		return appendArray(dst, x)
	case []any:
		return appendArray(dst, x)
	case []cbor.RawMessage:
		dst = cborx.AppendHead(dst, cborx.MajorArray, uint64(len(x)))
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
	if n, err := validate(raw); err != nil || n != len(raw) {
		if err == nil {
			err = cborx.Malformed("%d bytes after the item", len(raw)-n)
		}
		return nil, fmt.Errorf("cborrpc: raw CBOR value is not one valid item: %w", err)
	}
	return append(dst, raw...), nil
}

func appendArray(dst []byte, items []any) ([]byte, error) {
	dst = cborx.AppendHead(dst, cborx.MajorArray, uint64(len(items)))
	var err error
	for _, item := range items {
		if dst, err = appendValue(dst, item); err != nil {
			return nil, err
		}
	}
	return dst, nil
}
