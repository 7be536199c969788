package journal

import (
	"fmt"
	"unsafe"
)

// directBlock is the alignment of direct writes: memory address, file
// offset and length (4096 suits devices of 512- and 4096-byte sectors).
const directBlock = 4096

func alignDown(n int64) int64 { return n &^ (directBlock - 1) }
func alignUp(n int64) int64   { return alignDown(n + directBlock - 1) }

// useDirectWrites makes the segment's later groups go out as direct,
// asynchronous writes (startWrite). Block 0, which holds the header and
// its marks written through the page cache, is never written directly:
// until the records reach the second block they keep the O_DSYNC path.
func (s *segmentFile) useDirectWrites(open func(string) (*aioWriter, error)) error {
	w, err := open(s.f.Name())
	if err != nil {
		return fmt.Errorf("journal: opening %s for direct writes: %w", s.name(), err)
	}
	s.direct = w
	s.tail = s.tail[:0]
	return nil
}

// keepTail records the bytes of buf, just written at off, that lie in the
// block holding the new end of the records (from the second block on):
// a direct write rewrites that block whole.
func (s *segmentFile) keepTail(off int64, buf []byte) {
	end := off + int64(len(buf))
	b := alignDown(end)
	switch {
	case b < directBlock:
		return
	case b >= off:
		s.tail = append(s.tail[:0], buf[b-off:]...)
	default: // the same block as before the write
		s.tail = append(s.tail, buf...)
	}
}

// canStartDirect reports whether the next group may go out as a direct write.
func (s *segmentFile) canStartDirect() bool {
	return s.direct != nil && alignDown(s.off) >= directBlock
}

// startDirect submits buf, the next frames, as one direct write of the
// blocks from the one holding the end of the records: the bytes already
// there, then buf, then zeros to the block's end (the zeros preallocation
// put there). awaitDirect reports when it is durable.
func (s *segmentFile) startDirect(buf []byte) error {
	from := alignDown(s.off)
	n := int(alignUp(s.off+int64(len(buf))) - from)
	if cap(s.stage) < n {
		mem := make([]byte, n+directBlock)
		skip := (directBlock - int(uintptr(unsafe.Pointer(&mem[0]))%directBlock)) % directBlock
		s.stage = mem[skip : skip+n : skip+n]
	}
	st := s.stage[:n]
	k := copy(st, s.tail)
	k += copy(st[k:], buf)
	clear(st[k:])
	if err := s.direct.submit(st, from); err != nil {
		return fmt.Errorf("journal: writing %s: %w", s.name(), err)
	}
	s.keepTail(s.off, buf)
	s.off += int64(len(buf))
	s.alloc = max(s.alloc, from+int64(n))
	return nil
}

// awaitDirect waits for the direct write in flight.
func (s *segmentFile) awaitDirect() error {
	if err := s.direct.wait(); err != nil {
		return fmt.Errorf("journal: writing %s: %w", s.name(), err)
	}
	return nil
}
