package cborx

import (
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
)

// Limits is what Validate accepts beyond well-formedness: the caller's
// policy.
type Limits struct {
	// MaxDepth is the deepest nesting of arrays, maps and tags below the
	// top-level item (which is at depth 0).
	MaxDepth int
	// MaxItems caps the elements of one array and the pairs of one map.
	MaxItems uint64
	// AllowTag reports whether a tag number may appear; nil allows all.
	AllowTag func(num uint64) bool
}

// lenMaxDepth bounds the nesting Len follows, so hostile input cannot
// recurse without end; it is above any depth a Limits of this module
// accepts.
const lenMaxDepth = 1024

// Validate checks the item at the start of b and returns its length in
// bytes: well-formed, text strings valid UTF-8, tag 24 around a byte
// string, and within l.
func (l *Limits) Validate(b []byte) (int, error) {
	return walk(b, 0, l)
}

// Len returns the length of the well-formed item at the start of b. It
// checks structure and bounds only (not UTF-8 or tags), which is all that
// is needed to step over items Validate has already accepted.
func Len(b []byte) (int, bool) {
	n, err := walk(b, 0, nil)
	return n, err == nil
}

// walk returns the length of the item at the start of b; with l nil it
// checks structure only.
func walk(b []byte, depth int, l *Limits) (int, error) {
	if l != nil && depth > l.MaxDepth {
		return 0, Malformed("nesting deeper than %d levels", l.MaxDepth)
	}
	if depth > lenMaxDepth {
		return 0, Malformed("nesting deeper than %d levels", lenMaxDepth)
	}
	h, err := ReadHead(b)
	if err != nil {
		return 0, err
	}
	switch h.Major {
	case MajorUint, MajorNegInt, MajorSimple:
		return h.Size, nil
	case MajorBytes, MajorText:
		if h.Indefinite() {
			return walkChunks(b, h, l != nil)
		}
		if h.Arg > uint64(len(b)-h.Size) {
			return 0, ErrTruncated
		}
		end := h.Size + int(h.Arg)
		if l != nil && h.Major == MajorText && !utf8.Valid(b[h.Size:end]) {
			return 0, Malformed("text string is not valid UTF-8")
		}
		return end, nil
	case MajorArray, MajorMap:
		per := uint64(1)
		if h.Major == MajorMap {
			per = 2
		}
		if h.Indefinite() {
			return walkIndefinite(b, h, per, depth, l)
		}
		if l != nil && h.Arg > l.MaxItems {
			return 0, Malformed("container of %d items exceeds limit %d", h.Arg, l.MaxItems)
		}
		// Every item takes at least one byte: reject impossible counts
		// before looping over them.
		if h.Arg > uint64(len(b)-h.Size)/per {
			return 0, ErrTruncated
		}
		pos := h.Size
		for i := uint64(0); i < h.Arg*per; i++ {
			n, err := walk(b[pos:], depth+1, l)
			if err != nil {
				return 0, err
			}
			pos += n
		}
		return pos, nil
	case MajorTag:
		if l != nil {
			if l.AllowTag != nil && !l.AllowTag(h.Arg) {
				return 0, Malformed("unsupported CBOR tag %d", h.Arg)
			}
			if h.Arg == TagEmbedded && len(b) > h.Size && b[h.Size]>>5 != MajorBytes {
				return 0, Malformed("tag 24 does not wrap a byte string")
			}
		}
		n, err := walk(b[h.Size:], depth+1, l)
		if err != nil {
			return 0, err
		}
		return h.Size + n, nil
	}
	panic("unreachable: major type is 3 bits")
}

// walkChunks steps over an indefinite-length byte or text string:
// definite chunks of the same major type up to a break byte.
func walkChunks(b []byte, h Head, strict bool) (int, error) {
	pos := h.Size
	for {
		if pos >= len(b) {
			return 0, ErrTruncated
		}
		if b[pos] == Break {
			return pos + 1, nil
		}
		c, err := ReadHead(b[pos:])
		if err != nil {
			return 0, err
		}
		if c.Major != h.Major || c.Indefinite() {
			return 0, Malformed("bad chunk in indefinite-length string")
		}
		if c.Arg > uint64(len(b)-pos-c.Size) {
			return 0, ErrTruncated
		}
		end := pos + c.Size + int(c.Arg)
		if strict && h.Major == MajorText && !utf8.Valid(b[pos+c.Size:end]) {
			return 0, Malformed("text string is not valid UTF-8")
		}
		pos = end
	}
}

// walkIndefinite steps over an indefinite-length array (per 1) or map
// (per 2) up to its break byte.
func walkIndefinite(b []byte, h Head, per uint64, depth int, l *Limits) (int, error) {
	pos := h.Size
	for count := uint64(0); ; count++ {
		if pos >= len(b) {
			return 0, ErrTruncated
		}
		if b[pos] == Break {
			if count%per != 0 {
				return 0, Malformed("map with a key but no value")
			}
			return pos + 1, nil
		}
		if l != nil && count >= l.MaxItems*per {
			return 0, Malformed("container exceeds limit of %d items", l.MaxItems)
		}
		n, err := walk(b[pos:], depth+1, l)
		if err != nil {
			return 0, err
		}
		pos += n
	}
}

// Elements appends to dst the elements of the array, or the keys and
// values (alternating) of the map, at the start of b, each a sub-slice of
// b whose capacity ends with it. ok is false when b does not start with an
// array or map or an element is not well-formed.
func Elements(dst []cbor.RawMessage, b []byte) (_ []cbor.RawMessage, h Head, ok bool) {
	h, err := ReadHead(b)
	if err != nil || (h.Major != MajorArray && h.Major != MajorMap) {
		return dst, h, false
	}
	per := uint64(1)
	if h.Major == MajorMap {
		per = 2
	}
	pos := h.Size
	if !h.Indefinite() {
		if h.Arg > uint64(len(b)-pos)/per {
			return dst, h, false
		}
		if dst == nil {
			dst = make([]cbor.RawMessage, 0, h.Arg*per)
		}
	}
	for i := uint64(0); h.Indefinite() || i < h.Arg*per; i++ {
		if pos >= len(b) {
			return dst, h, false
		}
		if h.Indefinite() && b[pos] == Break {
			if i%per != 0 {
				return dst, h, false
			}
			break
		}
		n, ok := Len(b[pos:])
		if !ok {
			return dst, h, false
		}
		dst = append(dst, b[pos:pos+n:pos+n])
		pos += n
	}
	return dst, h, true
}

// List appends the elements of the array, or of the array inside a tuple
// tag, at the start of b. ok is false for anything else.
func List(dst []cbor.RawMessage, b []byte) (_ []cbor.RawMessage, ok bool) {
	b, _ = Untuple(b)
	if len(b) == 0 || b[0]>>5 != MajorArray {
		return dst, false
	}
	dst, _, ok = Elements(dst, b)
	return dst, ok
}

// Pair is one entry of an encoded map, key and value still encoded.
type Pair struct {
	Key, Value cbor.RawMessage
}

// EachPair calls fn with every entry of the map at the start of b, in
// encoded order, and reports whether b is a well-formed map. fn may have
// been called for leading entries when it returns false.
func EachPair(b []byte, fn func(key, value []byte)) bool {
	h, err := ReadHead(b)
	if err != nil || h.Major != MajorMap || (!h.Indefinite() && h.Arg > uint64(len(b))/2) {
		return false
	}
	pos := h.Size
	for i := uint64(0); h.Indefinite() || i < h.Arg; i++ {
		if pos >= len(b) {
			return false
		}
		if h.Indefinite() && b[pos] == Break {
			break
		}
		kn, ok := Len(b[pos:])
		if !ok {
			return false
		}
		key := b[pos : pos+kn : pos+kn]
		pos += kn
		vn, ok := Len(b[pos:])
		if !ok {
			return false
		}
		fn(key, b[pos:pos+vn:pos+vn])
		pos += vn
	}
	return true
}

// Pairs returns the entries of the map at the start of b; ok is false
// when b is not a well-formed map.
func Pairs(b []byte) (pairs []Pair, ok bool) {
	ok = EachPair(b, func(k, v []byte) { pairs = append(pairs, Pair{k, v}) })
	if !ok {
		return nil, false
	}
	return pairs, true
}

// AppendMap appends a definite-length map of the given entries, each kept
// byte for byte.
func AppendMap(dst []byte, pairs []Pair) []byte {
	dst = AppendHead(dst, MajorMap, uint64(len(pairs)))
	for _, p := range pairs {
		dst = append(dst, p.Key...)
		dst = append(dst, p.Value...)
	}
	return dst
}
