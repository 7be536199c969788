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
		var (
			plan  pgtype.EncodePlan
			array uint32 // the array type plan writes
		)
		switch value.(type) {
		case [][]byte:
			plan, array = encodeByteaArray, pgtype.ByteaArrayOID
		case []string:
			plan, array = encodeStringsAsBytea, pgtype.ByteaArrayOID
		case []int64:
			plan, array = encodeInt8Array, pgtype.Int8ArrayOID
		case []*int64:
			plan, array = encodeNullableInt8Array, pgtype.Int8ArrayOID
		case []int32:
			plan, array = encodeInt4Array, pgtype.Int4ArrayOID
		case []bool:
			plan, array = encodeBoolArray, pgtype.BoolArrayOID
		}
		if plan != nil && oid == array {
			return plan
		}
	}
	return c.Codec.PlanEncode(m, oid, format, value)
}

// appendArray appends a one-dimensional array of a's elements, of type
// elem, as pgx writes it: put appends an element's bytes, or reports it
// NULL (appending nothing). A nil slice is NULL.
func appendArray[T any](buf []byte, elem uint32, a []T, put func([]byte, T) ([]byte, bool)) []byte {
	if a == nil {
		return nil
	}
	start := len(buf)
	buf = binary.BigEndian.AppendUint32(buf, 1) // dimensions
	buf = binary.BigEndian.AppendUint32(buf, 0) // no NULL element (yet)
	buf = binary.BigEndian.AppendUint32(buf, elem)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(a)))
	buf = binary.BigEndian.AppendUint32(buf, 1) // lower bound
	for _, e := range a {
		at := len(buf)
		buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF) // length, or NULL
		var ok bool
		if buf, ok = put(buf, e); ok {
			binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
		} else {
			binary.BigEndian.PutUint32(buf[start+4:], 1) // has a NULL element
		}
	}
	return buf
}

// arrayPlan is the encode plan of one slice type: appendArray with the
// element type elem and put. The plans are package-level pointers, so
// returning one from PlanEncode allocates nothing.
type arrayPlan[T any] struct {
	elem uint32
	put  func([]byte, T) ([]byte, bool)
}

func (*arrayPlan[T]) fastArray() {}

func (p *arrayPlan[T]) Encode(value any, buf []byte) ([]byte, error) {
	return appendArray(buf, p.elem, value.([]T), p.put), nil
}

var (
	encodeByteaArray = &arrayPlan[[]byte]{pgtype.ByteaOID, func(b, e []byte) ([]byte, bool) {
		return append(b, e...), e != nil
	}}
	// encodeStringsAsBytea sends Go strings, which hold the backend's
	// names and keys as arbitrary bytes, as a bytea array without copying
	// each to a []byte first; no element is NULL ("" is an empty bytea).
	// pgx itself cannot encode a []string as bytea[].
	encodeStringsAsBytea = &arrayPlan[string]{pgtype.ByteaOID, func(b []byte, e string) ([]byte, bool) {
		return append(b, e...), true
	}}
	encodeInt8Array = &arrayPlan[int64]{pgtype.Int8OID, func(b []byte, e int64) ([]byte, bool) {
		return binary.BigEndian.AppendUint64(b, uint64(e)), true
	}}
	encodeNullableInt8Array = &arrayPlan[*int64]{pgtype.Int8OID, func(b []byte, e *int64) ([]byte, bool) {
		if e == nil {
			return b, false
		}
		return binary.BigEndian.AppendUint64(b, uint64(*e)), true
	}}
	encodeInt4Array = &arrayPlan[int32]{pgtype.Int4OID, func(b []byte, e int32) ([]byte, bool) {
		return binary.BigEndian.AppendUint32(b, uint32(e)), true
	}}
	encodeBoolArray = &arrayPlan[bool]{pgtype.BoolOID, func(b []byte, e bool) ([]byte, bool) {
		if e {
			return append(b, 1), true
		}
		return append(b, 0), true
	}}
)
