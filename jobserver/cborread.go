package jobserver

import (
	"encoding/binary"
	"math"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
)

// This file holds the allocation-free CBOR readers behind the parameter
// decoders in params.go. Parameters reach Handle as raw items that the
// cborrpc layer has already validated, so the common shapes (definite
// strings, small integers, float64, arrays and maps of those) are read
// here directly; anything unusual (indefinite-length strings, bignums,
// half floats) makes a reader report !ok and the caller falls back to the
// general fxamacker decoder, which also produces the error messages.

// maxReadDepth bounds the nesting itemLen follows; deeper items are left
// to the general decoder.
const maxReadDepth = 64

// itemHead decodes the head of the item at the start of b: major type,
// argument, head length, and whether the length is indefinite.
func itemHead(b []byte) (major byte, arg uint64, n int, indefinite, ok bool) {
	if len(b) == 0 {
		return 0, 0, 0, false, false
	}
	major, info := b[0]>>5, b[0]&0x1f
	switch {
	case info < 24:
		return major, uint64(info), 1, false, true
	case info == 24 && len(b) >= 2:
		return major, uint64(b[1]), 2, false, true
	case info == 25 && len(b) >= 3:
		return major, uint64(binary.BigEndian.Uint16(b[1:])), 3, false, true
	case info == 26 && len(b) >= 5:
		return major, uint64(binary.BigEndian.Uint32(b[1:])), 5, false, true
	case info == 27 && len(b) >= 9:
		return major, binary.BigEndian.Uint64(b[1:]), 9, false, true
	case info == 31 && major >= 2 && major <= 5:
		return major, 0, 1, true, true
	}
	return 0, 0, 0, false, false
}

// itemLen returns the length in bytes of the well-formed item at the start
// of b, or !ok when it is truncated, malformed or nested too deeply.
func itemLen(b []byte, depth int) (int, bool) {
	if depth > maxReadDepth {
		return 0, false
	}
	major, arg, n, indef, ok := itemHead(b)
	if !ok {
		return 0, false
	}
	switch major {
	case 0, 1, 7:
		return n, true
	case 2, 3:
		if indef {
			return containerLen(b, n, 0, true, depth)
		}
		if arg > uint64(len(b)-n) {
			return 0, false
		}
		return n + int(arg), true
	case 4:
		return containerLen(b, n, arg, indef, depth)
	case 5:
		if !indef && arg > uint64(len(b)) {
			return 0, false
		}
		return containerLen(b, n, 2*arg, indef, depth)
	case 6:
		l, ok := itemLen(b[n:], depth+1)
		return n + l, ok
	}
	return 0, false
}

// containerLen skips count items (or items up to a break byte) starting at
// offset pos and returns the end offset.
func containerLen(b []byte, pos int, count uint64, indef bool, depth int) (int, bool) {
	if !indef && count > uint64(len(b)-pos) {
		return 0, false // every item takes at least one byte
	}
	for i := uint64(0); indef || i < count; i++ {
		if pos >= len(b) {
			return 0, false
		}
		if indef && b[pos] == 0xff {
			return pos + 1, true
		}
		l, ok := itemLen(b[pos:], depth+1)
		if !ok {
			return 0, false
		}
		pos += l
	}
	return pos, true
}

// stringItem returns the contents of a definite-length byte string (text
// false) or valid UTF-8 text string (text true) item, without copying.
func stringItem(b []byte) (s []byte, text, ok bool) {
	major, arg, n, indef, ok := itemHead(b)
	if !ok || indef || (major != 2 && major != 3) || arg > uint64(len(b)-n) {
		return nil, false, false
	}
	s = b[n : n+int(arg)]
	if major == 3 && !utf8.Valid(s) {
		return nil, false, false
	}
	return s, major == 3, true
}

// listItems returns the elements of an array, or of an array wrapped in
// the tuple tag, as sub-slices of b; ok is false for anything else.
func listItems(b []byte) (items []cbor.RawMessage, ok bool) {
	return appendListItems(nil, b)
}

// appendListItems is listItems appending to items.
func appendListItems(items []cbor.RawMessage, b []byte) ([]cbor.RawMessage, bool) {
	major, arg, n, indef, ok := itemHead(b)
	if ok && major == 6 && arg == tagTuple {
		b = b[n:]
		major, arg, n, indef, ok = itemHead(b)
	}
	if !ok || major != 4 || (!indef && arg > uint64(len(b)-n)) {
		return items, false
	}
	if items == nil {
		items = make([]cbor.RawMessage, 0, arg)
	}
	pos := n
	for i := uint64(0); indef || i < arg; i++ {
		if pos >= len(b) {
			return items, false
		}
		if indef && b[pos] == 0xff {
			break
		}
		l, ok := itemLen(b[pos:], 1)
		if !ok {
			return items, false
		}
		items = append(items, b[pos:pos+l:pos+l])
		pos += l
	}
	return items, true
}

// eachMapEntry calls fn with the raw key and value of every entry of the
// map at the start of b, in encoded order. ok is false when b is not a
// well-formed map.
func eachMapEntry(b []byte, fn func(key, value []byte)) (ok bool) {
	major, arg, n, indef, ok := itemHead(b)
	if !ok || major != 5 || (!indef && arg > uint64(len(b))) {
		return false
	}
	pos := n
	for i := uint64(0); indef || i < arg; i++ {
		if pos >= len(b) {
			return false
		}
		if indef && b[pos] == 0xff {
			break
		}
		kl, ok := itemLen(b[pos:], 1)
		if !ok {
			return false
		}
		key := b[pos : pos+kl : pos+kl]
		pos += kl
		vl, ok := itemLen(b[pos:], 1)
		if !ok {
			return false
		}
		fn(key, b[pos:pos+vl:pos+vl])
		pos += vl
	}
	return true
}

// intItem reads an integer item that fits in an int64.
func intItem(b []byte) (int64, bool) {
	major, arg, _, _, ok := itemHead(b)
	if !ok || arg > 1<<63-1 {
		return 0, false
	}
	switch major {
	case 0:
		return int64(arg), true
	case 1:
		return -1 - int64(arg), true
	}
	return 0, false
}

// float64Item reads a double-precision float item (0xFB), the only float
// width the Python clients send.
func float64Item(b []byte) (float64, bool) {
	if len(b) < 9 || b[0] != 0xfb {
		return 0, false
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b[1:])), true
}
