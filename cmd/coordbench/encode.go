package main

import (
	"strconv"

	"github.com/coordinated/coordinated/internal/cborx"
)

// The add_work_units items the load generator sends in bulk, encoded by
// hand with internal/cborx. Everything else is encoded once with
// cborrpc.EncMode.

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
	dst = append(dst, 0xd8, cborx.TagTuple)
	dst = cborx.AppendHead(dst, cborx.MajorArray, 2)
	dst = cborx.AppendBytes(dst, key)
	dst = cborx.AppendHead(dst, cborx.MajorMap, 2)
	dst = cborx.AppendBytes(dst, []byte("i"))
	dst = cborx.AppendHead(dst, cborx.MajorUint, uint64(i))
	dst = cborx.AppendBytes(dst, []byte("pad"))
	return cborx.AppendBytes(dst, pad)
}
