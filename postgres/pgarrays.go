package postgres

import (
	"encoding/binary"

	"github.com/jackc/pgx/v5/pgtype"
)

// Array parameters without reflection. The hot statements take their
// rows as arrays (finish.sql, claim_many.sql, rowKeys): pgx encodes a
// [][]byte or []*int64 through reflection, boxing every element, which
// was a sixth of the committer's allocations. fastArrays replaces the
// codecs of the array types those statements use, on every connection of
// the backend's pool (Backend.New), with one that writes the slices the
// backend passes directly and hands any other value to pgx's own codec.
// The bytes sent are exactly pgx's (TestFastArraysEncodeAsPgx).

// fastArrayTypes are the array types fastArrays speeds up, with the Go
// slice types each accepts.
var fastArrayTypes = []struct {
	name string
	oid  uint32
}{
	{"_bytea", pgtype.ByteaArrayOID}, // [][]byte, []string
	{"_int8", pgtype.Int8ArrayOID},   // []int64, []*int64
	{"_int4", pgtype.Int4ArrayOID},   // []int32
	{"_bool", pgtype.BoolArrayOID},   // []bool
}

// registerFastArrays installs fastArrays on a connection's type map
// (pgxpool.Config.AfterConnect).
func registerFastArrays(m *pgtype.Map) {
	for _, t := range fastArrayTypes {
		pt, ok := m.TypeForOID(t.oid)
		if !ok {
			continue
		}
		m.RegisterType(&pgtype.Type{Name: pt.Name, OID: pt.OID, Codec: fastArrays{pt.Codec}})
	}
}

// fastArrays is an array codec that encodes the slice types of
// fastArrayTypes itself in the binary format and leaves everything else
// to the codec it wraps.
type fastArrays struct{ pgtype.Codec }

func (c fastArrays) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if format == pgtype.BinaryFormatCode {
		switch value.(type) {
		case [][]byte:
			if oid == pgtype.ByteaArrayOID {
				return encodeByteaArray{}
			}
		case []string:
			if oid == pgtype.ByteaArrayOID {
				return encodeStringsAsBytea{}
			}
		case []int64:
			if oid == pgtype.Int8ArrayOID {
				return encodeInt8Array{}
			}
		case []*int64:
			if oid == pgtype.Int8ArrayOID {
				return encodeNullableInt8Array{}
			}
		case []int32:
			if oid == pgtype.Int4ArrayOID {
				return encodeInt4Array{}
			}
		case []bool:
			if oid == pgtype.BoolArrayOID {
				return encodeBoolArray{}
			}
		}
	}
	return c.Codec.PlanEncode(m, oid, format, value)
}

// appendArrayHeader appends the binary header of a one-dimensional array
// of n elements of type elem, as pgx writes it: the null flag is set
// later (setArrayNulls) when an element is NULL.
func appendArrayHeader(buf []byte, elem uint32, n int) []byte {
	buf = binary.BigEndian.AppendUint32(buf, 1) // dimensions
	buf = binary.BigEndian.AppendUint32(buf, 0) // no NULL element (yet)
	buf = binary.BigEndian.AppendUint32(buf, elem)
	buf = binary.BigEndian.AppendUint32(buf, uint32(n))
	return binary.BigEndian.AppendUint32(buf, 1) // lower bound
}

// setArrayNulls sets the null flag of the array whose header starts at
// start.
func setArrayNulls(buf []byte, start int) {
	binary.BigEndian.PutUint32(buf[start+4:], 1)
}

// nullElement is the length of a NULL element.
const nullElement = 0xFFFFFFFF

type encodeByteaArray struct{}

func (encodeByteaArray) fastArray() {}

func (encodeByteaArray) Encode(value any, buf []byte) ([]byte, error) {
	a := value.([][]byte)
	if a == nil {
		return nil, nil
	}
	start := len(buf)
	buf = appendArrayHeader(buf, pgtype.ByteaOID, len(a))
	for _, e := range a {
		if e == nil {
			setArrayNulls(buf, start)
			buf = binary.BigEndian.AppendUint32(buf, nullElement)
			continue
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(e)))
		buf = append(buf, e...)
	}
	return buf, nil
}

// encodeStringsAsBytea sends Go strings, which hold the backend's names
// and keys as arbitrary bytes, as a bytea array without copying each to
// a []byte first; no element is NULL ("" is an empty bytea). pgx itself
// cannot encode a []string as bytea[].
type encodeStringsAsBytea struct{}

func (encodeStringsAsBytea) fastArray() {}

func (encodeStringsAsBytea) Encode(value any, buf []byte) ([]byte, error) {
	a := value.([]string)
	if a == nil {
		return nil, nil
	}
	buf = appendArrayHeader(buf, pgtype.ByteaOID, len(a))
	for _, e := range a {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(e)))
		buf = append(buf, e...)
	}
	return buf, nil
}

type encodeInt8Array struct{}

func (encodeInt8Array) fastArray() {}

func (encodeInt8Array) Encode(value any, buf []byte) ([]byte, error) {
	a := value.([]int64)
	if a == nil {
		return nil, nil
	}
	buf = appendArrayHeader(buf, pgtype.Int8OID, len(a))
	for _, e := range a {
		buf = binary.BigEndian.AppendUint32(buf, 8)
		buf = binary.BigEndian.AppendUint64(buf, uint64(e))
	}
	return buf, nil
}

type encodeNullableInt8Array struct{}

func (encodeNullableInt8Array) fastArray() {}

func (encodeNullableInt8Array) Encode(value any, buf []byte) ([]byte, error) {
	a := value.([]*int64)
	if a == nil {
		return nil, nil
	}
	start := len(buf)
	buf = appendArrayHeader(buf, pgtype.Int8OID, len(a))
	for _, e := range a {
		if e == nil {
			setArrayNulls(buf, start)
			buf = binary.BigEndian.AppendUint32(buf, nullElement)
			continue
		}
		buf = binary.BigEndian.AppendUint32(buf, 8)
		buf = binary.BigEndian.AppendUint64(buf, uint64(*e))
	}
	return buf, nil
}

type encodeInt4Array struct{}

func (encodeInt4Array) fastArray() {}

func (encodeInt4Array) Encode(value any, buf []byte) ([]byte, error) {
	a := value.([]int32)
	if a == nil {
		return nil, nil
	}
	buf = appendArrayHeader(buf, pgtype.Int4OID, len(a))
	for _, e := range a {
		buf = binary.BigEndian.AppendUint32(buf, 4)
		buf = binary.BigEndian.AppendUint32(buf, uint32(e))
	}
	return buf, nil
}

type encodeBoolArray struct{}

func (encodeBoolArray) fastArray() {}

func (encodeBoolArray) Encode(value any, buf []byte) ([]byte, error) {
	a := value.([]bool)
	if a == nil {
		return nil, nil
	}
	buf = appendArrayHeader(buf, pgtype.BoolOID, len(a))
	for _, e := range a {
		buf = binary.BigEndian.AppendUint32(buf, 1)
		b := byte(0)
		if e {
			b = 1
		}
		buf = append(buf, b)
	}
	return buf, nil
}
