package cborrpc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/coordinated/coordinated/internal/cborx"
)

// oversizeError reports a request item larger than the server's limit.
type oversizeError struct {
	size  int64 // announced or reached size; 0 when only "more than limit" is known
	limit int64
}

func (e *oversizeError) Error() string {
	if e.size > 0 {
		return fmt.Sprintf("request of %d bytes exceeds limit %d", e.size, e.limit)
	}
	return fmt.Sprintf("request exceeds limit %d bytes", e.limit)
}

// minGrow is the smallest capacity a request buffer starts with.
const minGrow = 512

// frameReader reads one top-level CBOR item at a time from a buffered
// stream, without ever buffering more than limit bytes for it. Its buffer
// grows only as bytes arrive (never to the size a head announces), and,
// on a server, the growth is charged to the daemon-wide request budget
// (see budget.go) until release.
type frameReader struct {
	r     *bufio.Reader
	limit int64
	mem   requestMemory
}

// next reads one complete top-level item and returns its bytes, with a
// tag-24 envelope already removed. The returned slice is freshly allocated
// and never reused. It returns io.EOF only for a clean end of stream
// between items; a stream ending inside an item is cborx.ErrTruncated.
// Structure, the nesting depth and the byte limit are checked as bytes
// arrive; the rest of the policy (UTF-8, tags, item counts) is validate's,
// run by the parser on the complete item.
func (fr *frameReader) next() ([]byte, error) {
	first, err := fr.r.Peek(1)
	if err != nil {
		return nil, err
	}
	// Fast path: the tag-24 envelope every shipped client sends. Only peek
	// a second byte when the first promises one (a lone 0xF6 must not
	// block waiting for more).
	if first[0] == 0xD8 {
		if p, err := fr.r.Peek(2); err == nil && p[1] == cborx.TagEmbedded {
			return fr.readWrapped()
		}
	}
	budget := fr.limit
	dst, err := fr.copyItem(nil, 0, &budget)
	if err != nil {
		return nil, noEOF(err)
	}
	return unwrapTag24(dst)
}

// readWrapped reads tag 24 + byte string and returns the string's content.
func (fr *frameReader) readWrapped() ([]byte, error) {
	if _, err := fr.r.Discard(2); err != nil {
		return nil, noEOF(err)
	}
	h, err := fr.readHead(nil)
	if err != nil {
		return nil, noEOF(err)
	}
	if h.Major != cborx.MajorBytes {
		return nil, cborx.Malformed("tag 24 does not wrap a byte string")
	}
	budget := fr.limit
	if h.Indefinite() {
		out, err := fr.readChunks(nil, h, &budget)
		return out, noEOF(err)
	}
	if h.Arg > uint64(fr.limit) {
		return nil, &oversizeError{size: int64(min(h.Arg, 1<<62)), limit: fr.limit}
	}
	if err := fr.mem.fits(int64(h.Arg)); err != nil {
		return nil, err
	}
	out, err := fr.readN(nil, int64(h.Arg))
	return out, noEOF(err)
}

// readHead reads one item head from the stream, appending its raw bytes to
// raw (when raw is non-nil the caller keeps them). It peeks at the
// reader's buffer rather than copying, so it does not allocate.
func (fr *frameReader) readHead(raw *[]byte) (cborx.Head, error) {
	p, err := fr.r.Peek(1)
	if err != nil {
		return cborx.Head{}, err
	}
	n := cborx.HeadSize(p[0])
	if n > 1 {
		if p, err = fr.r.Peek(n); err != nil {
			return cborx.Head{}, err
		}
	}
	h, err := cborx.ReadHead(p[:max(n, 1)])
	if err != nil {
		return cborx.Head{}, err
	}
	if raw != nil {
		if *raw, err = fr.grow(*raw, n, int64(n)); err != nil {
			return cborx.Head{}, err
		}
		*raw = append(*raw, p[:n]...)
	}
	fr.r.Discard(n)
	return h, nil
}

// grow makes room in dst for need more bytes (need <= most), growing its
// capacity at most to len(dst)+most: the bytes the item can still take.
// Growth doubles, so a body of n bytes costs O(n) copying, and every new
// byte of capacity is charged to the request memory first.
func (fr *frameReader) grow(dst []byte, need int, most int64) ([]byte, error) {
	if cap(dst)-len(dst) >= need {
		return dst, nil
	}
	newCap := max(len(dst)+need, 2*cap(dst), minGrow)
	newCap = int(min(int64(newCap), int64(len(dst))+max(most, int64(need))))
	if err := fr.mem.charge(int64(newCap - cap(dst))); err != nil {
		return nil, err
	}
	// slices.Grow does not clear the bytes it copies over; it may round
	// the capacity up to a size class, which is charged too.
	out := slices.Grow(dst[:len(dst):len(dst)], newCap-len(dst))
	if extra := cap(out) - newCap; extra > 0 {
		if err := fr.mem.charge(int64(extra)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readN appends exactly n bytes from the stream to dst. Memory follows
// the bytes actually received: it grows dst only by what has arrived
// (doubling, so a large body costs O(n) copying), and a head announcing a
// large string costs nothing until its body arrives. Once grown, dst's
// spare capacity is read into directly (bufio hands large reads straight
// to the connection), so big requests are not copied twice.
func (fr *frameReader) readN(dst []byte, n int64) ([]byte, error) {
	for n > 0 {
		if spare := cap(dst) - len(dst); spare > 0 {
			k := int(min(int64(spare), n))
			got, err := fr.r.Read(dst[len(dst) : len(dst)+k])
			dst = dst[:len(dst)+got]
			n -= int64(got)
			if err != nil && n > 0 {
				return nil, err
			}
			continue
		}
		avail := fr.r.Buffered()
		if avail == 0 {
			if _, err := fr.r.Peek(1); err != nil {
				return nil, err
			}
			avail = fr.r.Buffered()
		}
		var err error
		if dst, err = fr.grow(dst, int(min(int64(avail), n)), n); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// readChunks reads the chunks of an indefinite-length string whose head h
// was already consumed, appending their contents (not their heads) to dst.
func (fr *frameReader) readChunks(dst []byte, h cborx.Head, budget *int64) ([]byte, error) {
	for {
		c, err := fr.r.Peek(1)
		if err != nil {
			return nil, err
		}
		if c[0] == cborx.Break {
			fr.r.Discard(1)
			return dst, nil
		}
		ch, err := fr.readHead(nil)
		if err != nil {
			return nil, err
		}
		if ch.Major != h.Major || ch.Indefinite() {
			return nil, cborx.Malformed("bad chunk in indefinite-length string")
		}
		if err := spend(budget, ch.Arg, fr.limit); err != nil {
			return nil, err
		}
		if dst, err = fr.readN(dst, int64(ch.Arg)); err != nil {
			return nil, err
		}
	}
}

// spend takes n bytes from the remaining budget of the current item.
func spend(budget *int64, n uint64, limit int64) error {
	if n > uint64(*budget) {
		return &oversizeError{limit: limit}
	}
	*budget -= int64(n)
	return nil
}

// copyItem reads one complete CBOR item from the stream and appends its raw
// bytes to dst, checking its structure, the nesting limit and the byte
// budget as it goes, so nothing beyond the item is consumed and nothing
// larger than the budget is buffered.
func (fr *frameReader) copyItem(dst []byte, depth int, budget *int64) ([]byte, error) {
	if depth > MaxNestingDepth {
		return nil, cborx.Malformed("nesting deeper than %d levels", MaxNestingDepth)
	}
	start := len(dst)
	h, err := fr.readHead(&dst)
	if err != nil {
		return nil, err
	}
	if err := spend(budget, uint64(len(dst)-start), fr.limit); err != nil {
		return nil, err
	}
	switch h.Major {
	case cborx.MajorUint, cborx.MajorNegInt, cborx.MajorSimple:
		return dst, nil
	case cborx.MajorBytes, cborx.MajorText:
		if h.Indefinite() {
			return fr.copyChunks(dst, h, budget)
		}
		if err := spend(budget, h.Arg, fr.limit); err != nil {
			return nil, err
		}
		return fr.readN(dst, int64(h.Arg))
	case cborx.MajorArray, cborx.MajorMap:
		per := uint64(1)
		if h.Major == cborx.MajorMap {
			per = 2
		}
		// Every item takes at least one byte.
		if !h.Indefinite() && h.Arg > uint64(*budget)/per {
			return nil, &oversizeError{limit: fr.limit}
		}
		for i := uint64(0); h.Indefinite() || i < h.Arg*per; i++ {
			if h.Indefinite() {
				c, err := fr.r.Peek(1)
				if err != nil {
					return nil, err
				}
				if c[0] == cborx.Break {
					if i%per != 0 {
						return nil, cborx.Malformed("map with a key but no value")
					}
					return fr.copyBreak(dst, budget)
				}
			}
			if dst, err = fr.copyItem(dst, depth+1, budget); err != nil {
				return nil, err
			}
		}
		return dst, nil
	case cborx.MajorTag:
		return fr.copyItem(dst, depth+1, budget)
	}
	panic("unreachable: major type is 3 bits")
}

// copyBreak copies the break byte the stream is at.
func (fr *frameReader) copyBreak(dst []byte, budget *int64) ([]byte, error) {
	if err := spend(budget, 1, fr.limit); err != nil {
		return nil, err
	}
	dst, err := fr.grow(dst, 1, 1)
	if err != nil {
		return nil, err
	}
	fr.r.Discard(1)
	return append(dst, cborx.Break), nil
}

// copyChunks copies the chunks and break byte of an indefinite-length
// string whose head is already in dst.
func (fr *frameReader) copyChunks(dst []byte, h cborx.Head, budget *int64) ([]byte, error) {
	for {
		c, err := fr.r.Peek(1)
		if err != nil {
			return nil, err
		}
		if c[0] == cborx.Break {
			return fr.copyBreak(dst, budget)
		}
		start := len(dst)
		ch, err := fr.readHead(&dst)
		if err != nil {
			return nil, err
		}
		if ch.Major != h.Major || ch.Indefinite() {
			return nil, cborx.Malformed("bad chunk in indefinite-length string")
		}
		if err := spend(budget, uint64(len(dst)-start)+ch.Arg, fr.limit); err != nil {
			return nil, err
		}
		if dst, err = fr.readN(dst, int64(ch.Arg)); err != nil {
			return nil, err
		}
	}
}

// unwrapTag24 returns the content of item if it is tag 24 around a byte
// string, else item itself.
// The tag's head may take any of its encodings (0xD8 0x18, the one every
// client sends, or a longer one): the number is what counts.
func unwrapTag24(item []byte) ([]byte, error) {
	h, err := cborx.ReadHead(item)
	if err != nil || h.Major != cborx.MajorTag || h.Arg != cborx.TagEmbedded {
		return item, nil
	}
	content := item[h.Size:]
	if len(content) == 0 || content[0]>>5 != cborx.MajorBytes {
		return nil, cborx.Malformed("tag 24 does not wrap a byte string")
	}
	if s, _, ok := cborx.String(content); ok {
		return s, nil // alias instead of copying
	}
	s, _, ok := cborx.StringValue(content)
	if !ok {
		return nil, cborx.Malformed("tag 24 does not wrap a byte string")
	}
	return []byte(s), nil
}

// noEOF turns an EOF inside an item into cborx.ErrTruncated.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return cborx.ErrTruncated
	}
	return err
}
