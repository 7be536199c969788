package cborrpc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
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

// bigReadChunk bounds how much memory a large string costs before its bytes
// have actually arrived: a client announcing 200 MB and sending nothing must
// not make the server allocate 200 MB.
const bigReadChunk = 1 << 20

// frameReader reads one top-level CBOR item at a time from a buffered
// stream, without ever buffering more than limit bytes for it.
type frameReader struct {
	r     *bufio.Reader
	limit int64
}

// next reads one complete top-level item and returns its bytes, with a
// tag-24 envelope already removed. The returned slice is freshly allocated
// and never reused. It returns io.EOF only for a clean end of stream
// between items; a stream ending inside an item is errTruncated.
func (fr *frameReader) next() ([]byte, error) {
	first, err := fr.r.Peek(1)
	if err != nil {
		return nil, err
	}
	// Fast path: the tag-24 envelope every shipped client sends. Only peek
	// a second byte when the first promises one (a lone 0xF6 must not
	// block waiting for more).
	if first[0] == 0xD8 {
		if p, err := fr.r.Peek(2); err == nil && p[1] == 24 {
			return fr.readWrapped()
		}
	}
	var dst []byte
	budget := fr.limit
	dst, err = fr.copyItem(dst, 0, &budget)
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
	if h.major != majorBytes {
		return nil, malformed("tag 24 does not wrap a byte string")
	}
	if h.info == infoIndefinite {
		budget := fr.limit
		var out []byte
		out, err = fr.readChunks(out, h, &budget)
		if err != nil {
			return nil, noEOF(err)
		}
		return out, nil
	}
	if h.arg > uint64(fr.limit) {
		return nil, &oversizeError{size: int64(min(h.arg, 1<<62)), limit: fr.limit}
	}
	out, err := fr.readN(nil, int64(h.arg))
	return out, noEOF(err)
}

// readHead reads one item head from the stream, appending its raw bytes to
// raw (when raw is non-nil the caller keeps them). It peeks at the
// reader's buffer rather than copying, so it does not allocate.
func (fr *frameReader) readHead(raw *[]byte) (head, error) {
	p, err := fr.r.Peek(1)
	if err != nil {
		return head{}, err
	}
	n := 1
	if info := p[0] & 0x1f; info >= 24 && info <= 27 {
		n += 1 << (info - 24)
		if p, err = fr.r.Peek(n); err != nil {
			return head{}, err
		}
	}
	h, err := readHead(p[:n])
	if err != nil {
		return head{}, err
	}
	if raw != nil {
		*raw = append(*raw, p[:n]...)
	}
	fr.r.Discard(n)
	return h, nil
}

// readN appends exactly n bytes from the stream to dst, growing dst in
// bounded steps so memory follows the bytes actually received.
func (fr *frameReader) readN(dst []byte, n int64) ([]byte, error) {
	for n > 0 {
		step := min(n, bigReadChunk)
		if int64(cap(dst)-len(dst)) < step {
			dst = slices.Grow(dst, int(max(step, min(n, int64(len(dst))))))
		}
		start := len(dst)
		dst = dst[:start+int(step)]
		if _, err := io.ReadFull(fr.r, dst[start:]); err != nil {
			return nil, err
		}
		n -= step
	}
	return dst, nil
}

// readChunks reads the chunks of an indefinite-length string whose head h
// was already consumed, appending their contents (not their heads) to dst.
func (fr *frameReader) readChunks(dst []byte, h head, budget *int64) ([]byte, error) {
	for {
		c, err := fr.r.ReadByte()
		if err != nil {
			return nil, err
		}
		if c == breakByte {
			return dst, nil
		}
		if err := fr.r.UnreadByte(); err != nil {
			return nil, err
		}
		ch, err := fr.readHead(nil)
		if err != nil {
			return nil, err
		}
		if ch.major != h.major || ch.info == infoIndefinite {
			return nil, malformed("bad chunk in indefinite-length string")
		}
		if err := spend(budget, ch.arg, fr.limit); err != nil {
			return nil, err
		}
		if dst, err = fr.readN(dst, int64(ch.arg)); err != nil {
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
// bytes to dst, checking well-formedness, the nesting and item limits and
// the byte budget as it goes, so nothing beyond the item is consumed and
// nothing larger than the budget is buffered.
func (fr *frameReader) copyItem(dst []byte, depth int, budget *int64) ([]byte, error) {
	if depth > MaxNestingDepth {
		return nil, malformed("nesting deeper than %d levels", MaxNestingDepth)
	}
	start := len(dst)
	h, err := fr.readHead(&dst)
	if err != nil {
		return nil, err
	}
	if err := spend(budget, uint64(len(dst)-start), fr.limit); err != nil {
		return nil, err
	}
	switch h.major {
	case majorUint, majorNegInt, majorSimple:
		return dst, nil
	case majorBytes, majorText:
		if h.info == infoIndefinite {
			return fr.copyChunks(dst, h, budget)
		}
		if err := spend(budget, h.arg, fr.limit); err != nil {
			return nil, err
		}
		body := len(dst)
		if dst, err = fr.readN(dst, int64(h.arg)); err != nil {
			return nil, err
		}
		if h.major == majorText && !utf8.Valid(dst[body:]) {
			return nil, malformed("text string is not valid UTF-8")
		}
		return dst, nil
	case majorArray, majorMap:
		per := 1
		if h.major == majorMap {
			per = 2
		}
		if h.info != infoIndefinite && h.arg > MaxContainerItems {
			return nil, malformed("container of %d items exceeds limit %d", h.arg, MaxContainerItems)
		}
		for i := 0; h.info == infoIndefinite || i < int(h.arg)*per; i++ {
			if h.info == infoIndefinite {
				c, err := fr.r.Peek(1)
				if err != nil {
					return nil, err
				}
				if c[0] == breakByte {
					if i%per != 0 {
						return nil, malformed("map with a key but no value")
					}
					fr.r.Discard(1)
					dst = append(dst, breakByte)
					return dst, spend(budget, 1, fr.limit)
				}
				if i >= MaxContainerItems*per {
					return nil, malformed("container exceeds limit of %d items", MaxContainerItems)
				}
			}
			if dst, err = fr.copyItem(dst, depth+1, budget); err != nil {
				return nil, err
			}
		}
		return dst, nil
	case majorTag:
		if !allowedTag(h.arg) {
			return nil, malformed("unsupported CBOR tag %d", h.arg)
		}
		if h.arg == 24 {
			c, err := fr.r.Peek(1)
			if err != nil {
				return nil, err
			}
			if c[0]>>5 != majorBytes {
				return nil, malformed("tag 24 does not wrap a byte string")
			}
		}
		return fr.copyItem(dst, depth+1, budget)
	}
	panic("unreachable: major type is 3 bits")
}

// copyChunks copies the chunks and break byte of an indefinite-length
// string whose head is already in dst.
func (fr *frameReader) copyChunks(dst []byte, h head, budget *int64) ([]byte, error) {
	for {
		c, err := fr.r.Peek(1)
		if err != nil {
			return nil, err
		}
		if c[0] == breakByte {
			fr.r.Discard(1)
			return append(dst, breakByte), spend(budget, 1, fr.limit)
		}
		start := len(dst)
		ch, err := fr.readHead(&dst)
		if err != nil {
			return nil, err
		}
		if ch.major != h.major || ch.info == infoIndefinite {
			return nil, malformed("bad chunk in indefinite-length string")
		}
		if err := spend(budget, uint64(len(dst)-start)+ch.arg, fr.limit); err != nil {
			return nil, err
		}
		body := len(dst)
		if dst, err = fr.readN(dst, int64(ch.arg)); err != nil {
			return nil, err
		}
		if h.major == majorText && !utf8.Valid(dst[body:]) {
			return nil, malformed("text string is not valid UTF-8")
		}
	}
}

// unwrapTag24 returns the content of item if it is tag 24 around a byte
// string, else item itself.
func unwrapTag24(item []byte) ([]byte, error) {
	if len(item) < 2 || item[0] != 0xD8 || item[1] != 24 {
		return item, nil
	}
	s, ok := stringValue(item[2:])
	if !ok {
		return nil, malformed("tag 24 does not wrap a byte string")
	}
	if h, _ := readHead(item[2:]); h.info != infoIndefinite {
		return item[2+h.size:], nil // alias instead of copying
	}
	return []byte(s), nil
}

// noEOF turns an EOF inside an item into errTruncated.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errTruncated
	}
	return err
}
