package journal

import (
	"encoding/binary"
	"hash/crc32"
)

// On-disk format, version 2 (version 1 is still read). All integers are
// little-endian.
//
//	file header, version 2 (64 bytes):
//	   0 magic[4]  4 version uint32 (2)  8 seq uint64  16 content uint32
//	  20 crc uint32 (CRC-32C of bytes 0..19)
//	  24 mark slot 0 (16 bytes)  40 mark slot 1 (16 bytes)  56 zero[8]
//	file header, version 1 (20 bytes):
//	   0 magic[4]  4 version uint32 (1)  8 seq uint64  16 crc uint32
//	frame: length uint32 | crc uint32 | payload[length]
//
// content is the caller's own format version (Options.ContentVersion),
// handed back by Replay; a version 1 file reports 0. A frame's crc is
// CRC-32C of its 4 length bytes followed by the payload; covering the
// length means a run of zero bytes (what a crash can leave at the end of a
// file) is never a valid frame, even an empty one.
//
// A mark slot (segments only; zero in snapshots) is
//
//	end uint64 | state uint32 | crc uint32 (CRC-32C of seq and bytes 0..11)
//
// end is an offset up to which the segment's records were acknowledged;
// state is gen<<1 | sealed, where sealed (1) says segment seq+1 exists and
// continues the journal, and gen counts recoveries that cut the segment
// shorter than an earlier mark said. The two slots are written alternately
// so a torn slot write leaves the other one valid; the reader takes the
// valid slot with the larger (gen, sealed, end): within a generation marks
// only grow. docs/persistence.md explains how Replay uses them.
const (
	segmentMagic    = "CDJL" // coordinated journal log
	snapshotMagic   = "CDJS" // coordinated journal snapshot
	formatVersion   = 2
	headerSize      = 64
	formatV1        = 1
	headerSizeV1    = 20
	frameHeaderSize = 8

	slotOffset = 24
	slotSize   = 16

	// MaxRecordSize is the largest payload Append accepts and the largest
	// frame length a reader believes.
	MaxRecordSize = 1 << 30
	// MaxSegmentSize bounds the offsets a mark may name.
	MaxSegmentSize = 1 << 62
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// mark is the decoded content of a mark slot.
type mark struct {
	end    int64
	sealed bool
	gen    uint32
}

// after reports whether m was written after o.
func (m mark) after(o mark) bool {
	switch {
	case m.gen != o.gen:
		return m.gen > o.gen
	case m.sealed != o.sealed:
		return m.sealed
	}
	return m.end > o.end
}

// encodeHeader returns the header of a new segment or snapshot file. A
// segment's two mark slots say "nothing acknowledged yet, open".
func encodeHeader(magic string, seq uint64, content uint32) []byte {
	h := make([]byte, headerSize)
	copy(h, magic)
	binary.LittleEndian.PutUint32(h[4:], formatVersion)
	binary.LittleEndian.PutUint64(h[8:], seq)
	binary.LittleEndian.PutUint32(h[16:], content)
	binary.LittleEndian.PutUint32(h[20:], crc32.Checksum(h[:20], castagnoli))
	if magic == segmentMagic {
		s := encodeSlot(seq, mark{end: headerSize})
		copy(h[slotOffset:], s[:])
		copy(h[slotOffset+slotSize:], s[:])
	}
	return h
}

// encodeSlot encodes a mark slot of segment seq.
func encodeSlot(seq uint64, m mark) [slotSize]byte {
	var s [slotSize]byte
	binary.LittleEndian.PutUint64(s[:], uint64(m.end))
	state := m.gen << 1
	if m.sealed {
		state |= 1
	}
	binary.LittleEndian.PutUint32(s[8:], state)
	binary.LittleEndian.PutUint32(s[12:], slotCRC(seq, s[:12]))
	return s
}

func slotCRC(seq uint64, b []byte) uint32 {
	var sb [8]byte
	binary.LittleEndian.PutUint64(sb[:], seq)
	return crcSmall(crcSmall(0, sb[:]), b)
}

// crcSmall is crc32.Update with the Castagnoli table for a few bytes. A
// slice passed to crc32.Update escapes (it is called through a function
// value), so small stack buffers would cost an allocation per frame and
// per mark; this loop keeps them on the stack.
func crcSmall(crc uint32, p []byte) uint32 {
	crc = ^crc
	for _, b := range p {
		crc = castagnoli[byte(crc)^b] ^ (crc >> 8)
	}
	return ^crc
}

// decodeSlot returns the mark in a slot, false if the slot is invalid.
func decodeSlot(seq uint64, s []byte) (mark, bool) {
	if binary.LittleEndian.Uint32(s[12:]) != slotCRC(seq, s[:12]) {
		return mark{}, false
	}
	state := binary.LittleEndian.Uint32(s[8:])
	m := mark{end: int64(binary.LittleEndian.Uint64(s)), sealed: state&1 != 0, gen: state >> 1}
	if m.end < headerSize || m.end > MaxSegmentSize {
		return mark{}, false
	}
	return m, true
}

// fileHeader is a decoded header.
type fileHeader struct {
	version uint32 // formatV1 or formatVersion
	size    int64  // header bytes: where the first frame starts
	content uint32 // caller's content version; 0 for version 1 files
	hasMark bool   // a version 2 segment (mark valid)
	mark    mark   // the newest valid slot
	slot    int    // which slot holds it
}

// headerVersion checks the part common to both versions (magic, version
// number) in the first 8 bytes and returns the header's size, or a reason.
func headerVersion(h []byte, magic string) (uint32, int64, string) {
	if string(h[:4]) != magic {
		return 0, 0, "bad file magic"
	}
	switch v := binary.LittleEndian.Uint32(h[4:]); v {
	case formatV1:
		return v, headerSizeV1, ""
	case formatVersion:
		return v, headerSize, ""
	}
	return 0, 0, "unsupported format version (or a damaged header)"
}

// checkHeader validates a complete header h of the given version and
// returns it decoded, or why it is wrong.
func checkHeader(h []byte, magic string, seq uint64, version uint32) (fileHeader, string) {
	fh := fileHeader{version: version, size: int64(len(h))}
	crcAt := 16
	if version == formatVersion {
		crcAt = 20
		fh.content = binary.LittleEndian.Uint32(h[16:])
	}
	switch {
	case binary.LittleEndian.Uint32(h[crcAt:]) != crc32.Checksum(h[:crcAt], castagnoli):
		return fh, "header checksum mismatch"
	case binary.LittleEndian.Uint64(h[8:]) != seq:
		return fh, "header sequence number does not match the file name"
	}
	if version == formatVersion {
		unused := h[slotOffset+2*slotSize:]
		if magic == snapshotMagic {
			unused = h[slotOffset:]
		}
		for _, b := range unused {
			if b != 0 {
				return fh, "damaged header (bytes that must be zero are not)"
			}
		}
	}
	if version == formatVersion && magic == segmentMagic {
		m0, ok0 := decodeSlot(seq, h[slotOffset:slotOffset+slotSize])
		m1, ok1 := decodeSlot(seq, h[slotOffset+slotSize:slotOffset+2*slotSize])
		switch {
		case ok0 && (!ok1 || !m1.after(m0)):
			fh.mark, fh.slot = m0, 0
		case ok1:
			fh.mark, fh.slot = m1, 1
		default:
			return fh, "both mark slots of the header are damaged"
		}
		fh.hasMark = true
	}
	return fh, ""
}

// frameCRC is the checksum stored in a frame header.
func frameCRC(length [4]byte, payload []byte) uint32 {
	return crc32.Update(crcSmall(0, length[:]), castagnoli, payload)
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
