package cborx

import (
	"encoding/binary"
	"math"
	"unicode/utf8"
)

// IsNull reports whether b is absent, null or undefined.
func IsNull(b []byte) bool {
	return len(b) == 0 || (len(b) == 1 && (b[0] == Null || b[0] == Undefined))
}

// Untuple strips a tuple tag, returning the wrapped item and whether
// there was one.
func Untuple(b []byte) ([]byte, bool) {
	if h, err := ReadHead(b); err == nil && h.Major == MajorTag && h.Arg == TagTuple {
		return b[h.Size:], true
	}
	return b, false
}

// MajorOf returns the major type of the item at the start of b, or 0xFF
// when b is empty.
func MajorOf(b []byte) byte {
	if len(b) == 0 {
		return 0xFF
	}
	return b[0] >> 5
}

// String returns the contents of a definite-length byte string (text
// false) or valid UTF-8 text string (text true) without copying; ok is
// false for anything else, indefinite-length strings included.
func String(b []byte) (s []byte, text, ok bool) {
	h, err := ReadHead(b)
	if err != nil || (h.Major != MajorBytes && h.Major != MajorText) ||
		h.Indefinite() || h.Arg > uint64(len(b)-h.Size) {
		return nil, false, false
	}
	s = b[h.Size : h.Size+int(h.Arg)]
	if h.Major == MajorText && !utf8.Valid(s) {
		return nil, false, false
	}
	return s, h.Major == MajorText, true
}

// StringValue is String that also joins the chunks of an
// indefinite-length string (copying them).
func StringValue(b []byte) (s string, text, ok bool) {
	if v, text, ok := String(b); ok {
		return string(v), text, true
	}
	h, err := ReadHead(b)
	if err != nil || (h.Major != MajorBytes && h.Major != MajorText) || !h.Indefinite() {
		return "", false, false
	}
	var out []byte
	pos := h.Size
	for {
		if pos >= len(b) {
			return "", false, false
		}
		if b[pos] == Break {
			break
		}
		c, err := ReadHead(b[pos:])
		if err != nil || c.Major != h.Major || c.Indefinite() || c.Arg > uint64(len(b)-pos-c.Size) {
			return "", false, false
		}
		out = append(out, b[pos+c.Size:pos+c.Size+int(c.Arg)]...)
		pos += c.Size + int(c.Arg)
	}
	if h.Major == MajorText && !utf8.Valid(out) {
		return "", false, false
	}
	return string(out), h.Major == MajorText, true
}

// Uint reads an unsigned integer item.
func Uint(b []byte) (uint64, bool) {
	h, err := ReadHead(b)
	if err != nil || h.Major != MajorUint {
		return 0, false
	}
	return h.Arg, true
}

// Int reads an integer item that fits in an int64.
func Int(b []byte) (int64, bool) {
	h, err := ReadHead(b)
	if err != nil || h.Arg > math.MaxInt64 {
		return 0, false
	}
	switch h.Major {
	case MajorUint:
		return int64(h.Arg), true
	case MajorNegInt:
		return -1 - int64(h.Arg), true
	}
	return 0, false
}

// Float64 reads a double-precision float item (0xFB), the only float
// width the Python clients send.
func Float64(b []byte) (float64, bool) {
	if len(b) < 9 || b[0] != 0xFB {
		return 0, false
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b[1:])), true
}

// Bool reads false or true.
func Bool(b []byte) (value, ok bool) {
	if len(b) == 0 || (b[0] != False && b[0] != True) {
		return false, false
	}
	return b[0] == True, true
}
