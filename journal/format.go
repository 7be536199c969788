package journal

import (
	"encoding/binary"
	"hash/crc32"
)

// On-disk format, version 1. All integers are little-endian.
//
//	file header (20 bytes): magic[4] version uint32 seq uint64 crc uint32
//	frame:                  length uint32 crc uint32 payload[length]
//
// The header's crc is CRC-32C of its first 16 bytes. A frame's crc is
// CRC-32C of its 4 length bytes followed by the payload; covering the length
// means a run of zero bytes (what a crash can leave at the end of a file) is
// never a valid frame, even an empty one.
const (
	segmentMagic    = "CDJL" // coordinated journal log
	snapshotMagic   = "CDJS" // coordinated journal snapshot
	formatVersion   = 1
	headerSize      = 20
	frameHeaderSize = 8

	// MaxRecordSize is the largest payload Append accepts and the largest
	// frame length a reader believes.
	MaxRecordSize = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeHeader returns the header of a segment or snapshot file.
func encodeHeader(magic string, seq uint64) []byte {
	h := make([]byte, headerSize)
	copy(h, magic)
	binary.LittleEndian.PutUint32(h[4:], formatVersion)
	binary.LittleEndian.PutUint64(h[8:], seq)
	binary.LittleEndian.PutUint32(h[16:], crc32.Checksum(h[:16], castagnoli))
	return h
}

// checkHeader validates h (headerSize bytes) against the expected magic and
// sequence number and returns why it is wrong, or "" when it is right.
func checkHeader(h []byte, magic string, seq uint64) string {
	switch {
	case string(h[:4]) != magic:
		return "bad file magic"
	case binary.LittleEndian.Uint32(h[16:]) != crc32.Checksum(h[:16], castagnoli):
		return "header checksum mismatch"
	case binary.LittleEndian.Uint32(h[4:]) != formatVersion:
		return "unsupported format version"
	case binary.LittleEndian.Uint64(h[8:]) != seq:
		return "header sequence number does not match the file name"
	}
	return ""
}

// frameCRC is the checksum stored in a frame header.
func frameCRC(length [4]byte, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, length[:])
	return crc32.Update(c, castagnoli, payload)
}

// frameHeader encodes the 8-byte header of a frame carrying payload.
func frameHeader(payload []byte) [frameHeaderSize]byte {
	var h [frameHeaderSize]byte
	var length [4]byte
	binary.LittleEndian.PutUint32(length[:], uint32(len(payload)))
	copy(h[:4], length[:])
	binary.LittleEndian.PutUint32(h[4:], frameCRC(length, payload))
	return h
}
