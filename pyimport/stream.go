package pyimport

import (
	"errors"
	"fmt"
	"io"

	"github.com/fxamacker/cbor/v2"
)

// itemReader reads the CBOR items of one (uncompressed) Python file,
// keeping the byte offset of each for error messages.
type itemReader struct {
	file string
	dec  *cbor.Decoder
	off  int64 // offset of the item last returned
}

func newItemReader(file string, r io.Reader) *itemReader {
	return &itemReader{file: file, dec: decMode.NewDecoder(r)}
}

// next returns the next item; io.EOF at the end of the file. A file that
// ends inside an item fails with a *FormatError marked truncated.
func (r *itemReader) next() (item, error) {
	r.off = int64(r.dec.NumBytesRead())
	var v cbor.RawMessage
	err := r.dec.Decode(&v)
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, io.EOF):
		return nil, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, &truncatedError{r.errorf("the file ends inside an item (truncated)")}
	}
	var se *cbor.SyntaxError
	if errors.As(err, &se) {
		return nil, r.errorf("not CBOR: %v", err)
	}
	if errors.As(err, new(*cbor.MaxArrayElementsError)) || errors.As(err, new(*cbor.MaxNestedLevelError)) {
		return nil, r.errorf("%v", err)
	}
	return nil, fmt.Errorf("%s: reading at byte %d: %w", r.file, r.off, err)
}

func (r *itemReader) errorf(format string, args ...any) *FormatError {
	return &FormatError{File: r.file, Offset: r.off, Msg: fmt.Sprintf(format, args...)}
}

// truncatedError is a FormatError for a file that ends inside an item:
// what a Python daemon that was killed leaves at the end of its newest
// action log.
type truncatedError struct{ *FormatError }

func (e *truncatedError) Unwrap() error { return e.FormatError }
