package cborrpc

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
)

// CBOR major types (RFC 8949 §3.1).
const (
	majorUint   = 0
	majorNegInt = 1
	majorBytes  = 2
	majorText   = 3
	majorArray  = 4
	majorMap    = 5
	majorTag    = 6
	majorSimple = 7

	infoIndefinite = 31
	breakByte      = 0xFF
)

// errTruncated means the input ended inside a CBOR item.
var errTruncated = errors.New("truncated CBOR item")

// malformedError describes input that is not an acceptable CBOR item.
type malformedError struct{ reason string }

func (e *malformedError) Error() string { return e.reason }

func malformed(format string, args ...any) error {
	return &malformedError{reason: fmt.Sprintf(format, args...)}
}

// head is the decoded initial byte and argument of one CBOR item.
type head struct {
	major byte
	info  byte   // low 5 bits of the initial byte
	arg   uint64 // length, count, value or tag number (float bits for major 7)
	size  int    // bytes of the head itself
}

// readHead decodes the head at the start of b.
func readHead(b []byte) (head, error) {
	if len(b) == 0 {
		return head{}, errTruncated
	}
	h := head{major: b[0] >> 5, info: b[0] & 0x1f, size: 1}
	switch {
	case h.info < 24:
		h.arg = uint64(h.info)
	case h.info <= 27:
		n := 1 << (h.info - 24)
		if len(b) < 1+n {
			return head{}, errTruncated
		}
		for _, c := range b[1 : 1+n] {
			h.arg = h.arg<<8 | uint64(c)
		}
		h.size = 1 + n
	case h.info == infoIndefinite:
		switch h.major {
		case majorBytes, majorText, majorArray, majorMap:
		case majorSimple:
			return head{}, malformed("unexpected break byte")
		default:
			return head{}, malformed("indefinite length on major type %d", h.major)
		}
	default:
		return head{}, malformed("reserved additional information %d", h.info)
	}
	if h.major == majorSimple && h.info == 24 && h.arg < 32 {
		return head{}, malformed("two-byte encoding of simple value %d", h.arg)
	}
	return h, nil
}

// skipItem validates the CBOR item at the start of b and returns its length
// in bytes. depth is the nesting level of the item (0 at top level). It
// accepts only well-formed items within this package's limits, valid UTF-8
// text and the tags allowedTag admits.
func skipItem(b []byte, depth int) (int, error) {
	if depth > MaxNestingDepth {
		return 0, malformed("nesting deeper than %d levels", MaxNestingDepth)
	}
	h, err := readHead(b)
	if err != nil {
		return 0, err
	}
	switch h.major {
	case majorUint, majorNegInt, majorSimple:
		return h.size, nil
	case majorBytes, majorText:
		if h.info == infoIndefinite {
			return skipChunks(b, h)
		}
		if h.arg > uint64(len(b)-h.size) {
			return 0, errTruncated
		}
		end := h.size + int(h.arg)
		if h.major == majorText && !utf8.Valid(b[h.size:end]) {
			return 0, malformed("text string is not valid UTF-8")
		}
		return end, nil
	case majorArray, majorMap:
		per := 1
		if h.major == majorMap {
			per = 2
		}
		if h.info == infoIndefinite {
			return skipIndefiniteContainer(b, h, per, depth)
		}
		if h.arg > MaxContainerItems {
			return 0, malformed("container of %d items exceeds limit %d", h.arg, MaxContainerItems)
		}
		// Every item takes at least one byte: reject impossible counts
		// before looping over them.
		if h.arg*uint64(per) > uint64(len(b)-h.size) {
			return 0, errTruncated
		}
		pos := h.size
		for i := 0; i < int(h.arg)*per; i++ {
			n, err := skipItem(b[pos:], depth+1)
			if err != nil {
				return 0, err
			}
			pos += n
		}
		return pos, nil
	case majorTag:
		if !allowedTag(h.arg) {
			return 0, malformed("unsupported CBOR tag %d", h.arg)
		}
		if h.arg == 24 && (len(b) <= h.size || b[h.size]>>5 != majorBytes) {
			if len(b) <= h.size {
				return 0, errTruncated
			}
			return 0, malformed("tag 24 does not wrap a byte string")
		}
		n, err := skipItem(b[h.size:], depth+1)
		if err != nil {
			return 0, err
		}
		return h.size + n, nil
	}
	panic("unreachable: major type is 3 bits")
}

// skipChunks skips an indefinite-length byte or text string: definite
// chunks of the same major type up to a break byte.
func skipChunks(b []byte, h head) (int, error) {
	pos := h.size
	for {
		if pos >= len(b) {
			return 0, errTruncated
		}
		if b[pos] == breakByte {
			return pos + 1, nil
		}
		c, err := readHead(b[pos:])
		if err != nil {
			return 0, err
		}
		if c.major != h.major || c.info == infoIndefinite {
			return 0, malformed("bad chunk in indefinite-length string")
		}
		if c.arg > uint64(len(b)-pos-c.size) {
			return 0, errTruncated
		}
		end := pos + c.size + int(c.arg)
		if h.major == majorText && !utf8.Valid(b[pos+c.size:end]) {
			return 0, malformed("text string is not valid UTF-8")
		}
		pos = end
	}
}

// skipIndefiniteContainer skips an indefinite-length array (per 1) or map
// (per 2) up to its break byte.
func skipIndefiniteContainer(b []byte, h head, per, depth int) (int, error) {
	pos := h.size
	for count := 0; ; count++ {
		if pos >= len(b) {
			return 0, errTruncated
		}
		if b[pos] == breakByte {
			if count%per != 0 {
				return 0, malformed("map with a key but no value")
			}
			return pos + 1, nil
		}
		if count >= MaxContainerItems*per {
			return 0, malformed("container exceeds limit of %d items", MaxContainerItems)
		}
		n, err := skipItem(b[pos:], depth+1)
		if err != nil {
			return 0, err
		}
		pos += n
	}
}

// validatedLen returns the length of the item at the start of b, which
// skipItem has already accepted as part of an enclosing item: it walks the
// item again without repeating the checks (UTF-8, limits, tags).
func validatedLen(b []byte) int {
	h, _ := readHead(b)
	switch h.major {
	case majorUint, majorNegInt, majorSimple:
		return h.size
	case majorBytes, majorText:
		if h.info != infoIndefinite {
			return h.size + int(h.arg)
		}
		pos := h.size
		for b[pos] != breakByte {
			c, _ := readHead(b[pos:])
			pos += c.size + int(c.arg)
		}
		return pos + 1
	case majorArray, majorMap:
		per := 1
		if h.major == majorMap {
			per = 2
		}
		pos := h.size
		if h.info == infoIndefinite {
			for b[pos] != breakByte {
				pos += validatedLen(b[pos:])
			}
			return pos + 1
		}
		for i := 0; i < int(h.arg)*per; i++ {
			pos += validatedLen(b[pos:])
		}
		return pos
	}
	return h.size + validatedLen(b[h.size:]) // majorTag
}

// validatedItems is containerItems for an array or map that skipItem has
// already accepted.
func validatedItems(b []byte, h head, per int) []cbor.RawMessage {
	pos := h.size
	if h.info == infoIndefinite {
		var items []cbor.RawMessage
		for b[pos] != breakByte {
			n := validatedLen(b[pos:])
			items = append(items, b[pos:pos+n:pos+n])
			pos += n
		}
		return items
	}
	items := make([]cbor.RawMessage, int(h.arg)*per)
	for i := range items {
		n := validatedLen(b[pos:])
		items[i] = b[pos : pos+n : pos+n]
		pos += n
	}
	return items
}

// containerItems returns the raw element items of the array at the start
// of b (definite or indefinite length), validating each.
func containerItems(b []byte, h head, per int) ([]cbor.RawMessage, error) {
	pos := h.size
	var items []cbor.RawMessage
	if h.info != infoIndefinite {
		items = make([]cbor.RawMessage, 0, int(h.arg)*per)
	}
	for i := 0; ; i++ {
		if h.info == infoIndefinite {
			if pos >= len(b) {
				return nil, errTruncated
			}
			if b[pos] == breakByte {
				return items, nil
			}
		} else if i == int(h.arg)*per {
			return items, nil
		}
		n, err := skipItem(b[pos:], 1)
		if err != nil {
			return nil, err
		}
		items = append(items, b[pos:pos+n:pos+n])
		pos += n
	}
}

// stringBytes returns the contents of a definite-length byte or text
// string item without copying; ok is false for anything else.
func stringBytes(b []byte) (s []byte, ok bool) {
	h, err := readHead(b)
	if err != nil || (h.major != majorBytes && h.major != majorText) ||
		h.info == infoIndefinite || h.arg > uint64(len(b)-h.size) {
		return nil, false
	}
	return b[h.size : h.size+int(h.arg)], true
}

// stringValue returns the contents of the byte or text string item b
// (definite or indefinite length); ok is false for any other item.
func stringValue(b []byte) (s string, ok bool) {
	h, err := readHead(b)
	if err != nil || (h.major != majorBytes && h.major != majorText) {
		return "", false
	}
	if h.info != infoIndefinite {
		if h.arg > uint64(len(b)-h.size) {
			return "", false
		}
		return string(b[h.size : h.size+int(h.arg)]), true
	}
	var out []byte
	pos := h.size
	for pos < len(b) && b[pos] != breakByte {
		c, err := readHead(b[pos:])
		if err != nil || c.arg > uint64(len(b)-pos-c.size) {
			return "", false
		}
		out = append(out, b[pos+c.size:pos+c.size+int(c.arg)]...)
		pos += c.size + int(c.arg)
	}
	return string(out), true
}
