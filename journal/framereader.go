package journal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// frameReader reads the frames of one segment or snapshot file in order,
// keeping the byte offset of each so damage can be reported precisely.
type frameReader struct {
	path string
	r    *bufio.Reader
	off  int64 // offset of the next frame
	size int64 // file size when opened
	hdr  fileHeader
	buf  []byte
}

// damage describes a frame that could not be read.
type damage struct {
	off    int64
	end    int64 // where the frame claims to end (0 if unknown)
	reason string
	// pastEOF: the frame header or its claimed payload runs past the end
	// of the file (what a crash in the middle of a write leaves).
	pastEOF bool
	// acked: the damage lies before the segment's mark, in records that
	// were acknowledged; it can never be a torn write.
	acked bool
}

func (d *damage) Error() string { return fmt.Sprintf("offset %d: %s", d.off, d.reason) }

// corrupt turns the damage into the error Open and Replay report.
func (d *damage) corrupt(path string) *CorruptError {
	return &CorruptError{File: path, Offset: d.off, Reason: d.reason}
}

// openFrames opens path, checks its header and returns a reader positioned
// on the first frame (fr.hdr holds the decoded header). A header that
// cannot be read is reported as *damage at offset 0 (with pastEOF set when
// the file is shorter than a header).
func openFrames(path, magic string, seq uint64) (*os.File, *frameReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: opening %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("journal: stat %s: %w", path, err)
	}
	fr := &frameReader{path: path, r: bufio.NewReaderSize(f, 1<<20), size: st.Size()}
	h := make([]byte, headerSize)
	fail := func(err error) (*os.File, *frameReader, error) {
		f.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, nil, &damage{off: 0, reason: "file shorter than its header", pastEOF: true}
		}
		return nil, nil, fmt.Errorf("journal: reading %s: %w", path, err)
	}
	if _, err := io.ReadFull(fr.r, h[:8]); err != nil {
		return fail(err)
	}
	version, size, reason := headerVersion(h, magic)
	if reason != "" {
		f.Close()
		return nil, nil, &damage{off: 0, reason: reason}
	}
	if _, err := io.ReadFull(fr.r, h[8:size]); err != nil {
		return fail(err)
	}
	fr.hdr, reason = checkHeader(h[:size], magic, seq, version)
	if reason != "" {
		f.Close()
		return nil, nil, &damage{off: 0, reason: reason}
	}
	fr.off = size
	return f, fr, nil
}

// next returns the payload of the next frame, valid until the following
// call; io.EOF at a clean end of file; *damage for a frame that is cut
// short or fails its checksum; any other error for a failed read.
func (fr *frameReader) next() ([]byte, error) {
	var h [frameHeaderSize]byte
	n, err := io.ReadFull(fr.r, h[:])
	if err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, &damage{off: fr.off, reason: fmt.Sprintf("frame header cut short (%d of %d bytes)", n, frameHeaderSize), pastEOF: true}
		}
		return nil, fmt.Errorf("journal: reading %s at offset %d: %w", fr.path, fr.off, err)
	}
	length := binary.LittleEndian.Uint32(h[:4])
	end := fr.off + frameHeaderSize + int64(length)
	if end > fr.size {
		return nil, &damage{off: fr.off, reason: fmt.Sprintf("frame of %d bytes runs past the end of the file (%d bytes)", length, fr.size), pastEOF: true}
	}
	if length > MaxRecordSize {
		return nil, &damage{off: fr.off, end: end, reason: fmt.Sprintf("frame length %d exceeds the maximum %d", length, MaxRecordSize)}
	}
	if cap(fr.buf) < int(length) {
		fr.buf = make([]byte, length)
	}
	payload := fr.buf[:length]
	if _, err := io.ReadFull(fr.r, payload); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, &damage{off: fr.off, reason: "frame payload cut short", pastEOF: true}
		}
		return nil, fmt.Errorf("journal: reading %s at offset %d: %w", fr.path, fr.off, err)
	}
	if binary.LittleEndian.Uint32(h[4:]) != frameCRC([4]byte(h[:4]), payload) {
		return nil, &damage{off: fr.off, end: end, reason: "frame checksum mismatch", pastEOF: end == fr.size}
	}
	fr.off = end
	return payload, nil
}

// zeroFrom reports whether every byte of the file from off to its end is
// zero: a crash can extend a file with zeros that never held data, and
// preallocation writes zeros ahead of the records.
func zeroFrom(path string, off int64) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("journal: opening %s: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := f.ReadAt(buf, off)
		for _, b := range buf[:n] {
			if b != 0 {
				return false, nil
			}
		}
		off += int64(n)
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("journal: reading %s: %w", path, err)
		}
	}
}

// isPreallocatedEnd decides whether damage in the last segment is the
// clean end of its records: a frame boundary after the header followed by
// nothing but zeros, as preallocation leaves it (segment.go). A crash that
// extended the file with zeros past the last complete record looks the
// same and is equally harmless: no record is lost.
func isPreallocatedEnd(path string, d *damage) (bool, error) {
	if d.off < headerSizeV1 {
		return false, nil
	}
	return zeroFrom(path, d.off)
}

// isTornTail decides whether damage in the last segment is the torn end of
// an interrupted write (true) rather than corruption: nothing readable
// follows it, because it runs past the end of the file, or it and
// everything after it are zeros, or only zeros follow the damaged frame (a
// crash can leave the blocks of a write unwritten, reading back as zeros).
func isTornTail(path string, d *damage) (bool, error) {
	if d.pastEOF {
		return true, nil
	}
	if zero, err := zeroFrom(path, d.off); zero || err != nil {
		return zero, err
	}
	if d.end > d.off {
		return zeroFrom(path, d.end)
	}
	return false, nil
}
