package main

import "strconv"

// A minimal CBOR encoder for the add_work_units items the load generator
// sends in bulk (RFC 8949 §3). Everything else is encoded once with
// cborrpc.EncMode.

// CBOR major types used here.
const (
	majorUint  = 0
	majorBytes = 2
	majorArray = 4
	majorMap   = 5
)

// appendHead appends an item head with the shortest argument encoding.
func appendHead(dst []byte, major byte, arg uint64) []byte {
	m := major << 5
	switch {
	case arg < 24:
		return append(dst, m|byte(arg))
	case arg <= 0xff:
		return append(dst, m|24, byte(arg))
	case arg <= 0xffff:
		return append(dst, m|25, byte(arg>>8), byte(arg))
	case arg <= 0xffffffff:
		return append(dst, m|26, byte(arg>>24), byte(arg>>16), byte(arg>>8), byte(arg))
	}
	return append(dst, m|27, byte(arg>>56), byte(arg>>48), byte(arg>>40), byte(arg>>32),
		byte(arg>>24), byte(arg>>16), byte(arg>>8), byte(arg))
}

// appendBytes appends a byte string.
func appendBytes(dst, b []byte) []byte {
	return append(appendHead(dst, majorBytes, uint64(len(b))), b...)
}

// appendUnit appends one add_work_units item, the tuple
// (b'u%08d', {b'i': i, b'pad': pad}), as a Python 2 client encodes it.
func appendUnit(dst []byte, i int, pad []byte) []byte {
	var keyBuf, digitBuf [24]byte
	digits := strconv.AppendInt(digitBuf[:0], int64(i), 10)
	key := append(keyBuf[:0], 'u')
	for range 8 - len(digits) {
		key = append(key, '0')
	}
	key = append(key, digits...)
	dst = append(dst, 0xd8, 128) // tag 128: tuple
	dst = appendHead(dst, majorArray, 2)
	dst = appendBytes(dst, key)
	dst = appendHead(dst, majorMap, 2)
	dst = appendBytes(dst, []byte("i"))
	dst = appendHead(dst, majorUint, uint64(i))
	dst = appendBytes(dst, []byte("pad"))
	return appendBytes(dst, pad)
}
