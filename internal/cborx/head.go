package cborx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Major types (RFC 8949 §3.1).
const (
	MajorUint   = 0
	MajorNegInt = 1
	MajorBytes  = 2
	MajorText   = 3
	MajorArray  = 4
	MajorMap    = 5
	MajorTag    = 6
	MajorSimple = 7
)

const (
	// InfoIndefinite is the additional information of an indefinite
	// length string, array or map.
	InfoIndefinite = 31
	// Break ends an indefinite-length item.
	Break = 0xFF
	// Null and Undefined are the simple values Python's None becomes.
	Null      = 0xF6
	Undefined = 0xF7
	False     = 0xF4
	True      = 0xF5
)

// Tags with a meaning in the protocol.
const (
	// TagEmbedded wraps a byte string holding one encoded item (RFC 8949
	// §3.4.5.1); every request and response travels inside one.
	TagEmbedded = 24
	// TagTuple is what the Python clients put around a tuple.
	TagTuple = 128
)

// ErrTruncated means the input ended inside an item.
var ErrTruncated = errors.New("truncated CBOR item")

// MalformedError describes bytes that are not an acceptable item.
type MalformedError struct{ Reason string }

func (e *MalformedError) Error() string { return e.Reason }

// Malformed returns a *MalformedError with a formatted reason.
func Malformed(format string, args ...any) error {
	return &MalformedError{Reason: fmt.Sprintf(format, args...)}
}

// Head is the decoded initial byte and argument of one item.
type Head struct {
	Major byte
	Info  byte   // low 5 bits of the initial byte
	Arg   uint64 // length, count, value or tag number (float bits for major 7)
	Size  int    // bytes of the head itself
}

// Indefinite reports an indefinite-length string, array or map.
func (h Head) Indefinite() bool { return h.Info == InfoIndefinite }

// HeadSize returns how many bytes a head starting with initial byte c
// takes, so a stream reader knows how much to peek; 0 for a reserved
// additional information.
func HeadSize(c byte) int {
	switch info := c & 0x1f; {
	case info < 24 || info == InfoIndefinite:
		return 1
	case info <= 27:
		return 1 + 1<<(info-24)
	}
	return 0
}

// ReadHead decodes the head at the start of b. It rejects what RFC 8949
// calls not well-formed: reserved additional information, indefinite
// length on an integer or tag, a lone break byte and a two-byte simple
// value below 32.
func ReadHead(b []byte) (Head, error) {
	if len(b) == 0 {
		return Head{}, ErrTruncated
	}
	h := Head{Major: b[0] >> 5, Info: b[0] & 0x1f, Size: 1}
	switch {
	case h.Info < 24:
		h.Arg = uint64(h.Info)
	case h.Info == 24:
		if len(b) < 2 {
			return Head{}, ErrTruncated
		}
		h.Arg, h.Size = uint64(b[1]), 2
	case h.Info == 25:
		if len(b) < 3 {
			return Head{}, ErrTruncated
		}
		h.Arg, h.Size = uint64(binary.BigEndian.Uint16(b[1:])), 3
	case h.Info == 26:
		if len(b) < 5 {
			return Head{}, ErrTruncated
		}
		h.Arg, h.Size = uint64(binary.BigEndian.Uint32(b[1:])), 5
	case h.Info == 27:
		if len(b) < 9 {
			return Head{}, ErrTruncated
		}
		h.Arg, h.Size = binary.BigEndian.Uint64(b[1:]), 9
	case h.Info == InfoIndefinite:
		switch h.Major {
		case MajorBytes, MajorText, MajorArray, MajorMap:
		case MajorSimple:
			return Head{}, Malformed("unexpected break byte")
		default:
			return Head{}, Malformed("indefinite length on major type %d", h.Major)
		}
	default:
		return Head{}, Malformed("reserved additional information %d", h.Info)
	}
	if h.Major == MajorSimple && h.Info == 24 && h.Arg < 32 {
		return Head{}, Malformed("two-byte encoding of simple value %d", h.Arg)
	}
	return h, nil
}

// AppendHead appends a definite-length head with the shortest argument
// encoding.
func AppendHead(dst []byte, major byte, arg uint64) []byte {
	m := major << 5
	switch {
	case arg < 24:
		return append(dst, m|byte(arg))
	case arg <= math.MaxUint8:
		return append(dst, m|24, byte(arg))
	case arg <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, m|25), uint16(arg))
	case arg <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, m|26), uint32(arg))
	}
	return binary.BigEndian.AppendUint64(append(dst, m|27), arg)
}

// AppendInt appends an integer.
func AppendInt(dst []byte, v int64) []byte {
	if v >= 0 {
		return AppendHead(dst, MajorUint, uint64(v))
	}
	return AppendHead(dst, MajorNegInt, uint64(-(v + 1)))
}

// AppendFloat64 appends f as a double-precision float (0xFB), the only
// float width the protocol sends.
func AppendFloat64(dst []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, 0xFB), math.Float64bits(f))
}

// AppendBytes appends s as a byte string.
func AppendBytes[S ~string | ~[]byte](dst []byte, s S) []byte {
	return append(AppendHead(dst, MajorBytes, uint64(len(s))), s...)
}

// AppendText appends s as a text string; s must be valid UTF-8.
func AppendText[S ~string | ~[]byte](dst []byte, s S) []byte {
	return append(AppendHead(dst, MajorText, uint64(len(s))), s...)
}
