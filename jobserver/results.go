package jobserver

import (
	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/cborx"
)

// This file encodes the results of the hot methods (get_work,
// update_work_unit, add_work_units) straight to CBOR bytes. The generic
// path builds a tree of cborrpc.Tuple and interface values that costs a
// dozen allocations per call; a resultWriter costs one. The bytes are the
// same the generic encoder produces (tuples as tag 128, names with their
// string kind, stored data verbatim).

// okResult is the encoded (True, None) pair. It is never modified: the
// cborrpc layer copies a cbor.RawMessage result into its response.
var okResult any = cbor.RawMessage{0xd8, tagTuple, 0x82, 0xf5, 0xf6}

// resultWriter appends one encoded result.
type resultWriter struct {
	b []byte
}

// newResultWriter returns a writer with room for size bytes.
func newResultWriter(size int) *resultWriter {
	return &resultWriter{b: make([]byte, 0, size)}
}

// tuple starts a tuple of n elements.
func (w *resultWriter) tuple(n int) {
	w.b = cborx.AppendHead(append(w.b, 0xd8, tagTuple), cborx.MajorArray, uint64(n))
}

// list starts a list of n elements.
func (w *resultWriter) list(n int) {
	w.b = cborx.AppendHead(w.b, cborx.MajorArray, uint64(n))
}

// null appends None.
func (w *resultWriter) null() {
	w.b = append(w.b, 0xf6)
}

// name appends a name as the string kind it arrived as.
func (w *resultWriter) name(n coordinate.Name) {
	major := byte(2)
	if n.Text {
		major = 3
	}
	w.b = append(cborx.AppendHead(w.b, major, uint64(len(n.Bytes))), n.Bytes...)
}

// data appends stored user data verbatim, or None when there is none.
func (w *resultWriter) data(d coordinate.Data) {
	if len(d) == 0 {
		w.null()
		return
	}
	w.b = append(w.b, d...)
}

// result returns the encoded result for Handle to return.
func (w *resultWriter) result() any {
	return cbor.RawMessage(w.b)
}

// attemptSize is a generous estimate of one encoded work tuple.
func attemptSize(a *coordinate.Attempt) int {
	return 3 + 3*9 + len(a.Spec.Bytes) + len(a.Key.Bytes) + len(a.Data)
}

// workResult encodes get_work's answer: ((spec, key, data), None) for a
// single-unit request (with (None, None, None) when there is no work), or
// ([(spec, key, data)...], None) otherwise.
func workResult(attempts []coordinate.Attempt, single, tokens bool) any {
	size := 16
	for i := range attempts {
		size += attemptSize(&attempts[i])
	}
	w := newResultWriter(size)
	w.tuple(2)
	switch {
	case single && len(attempts) == 0:
		w.tuple(3)
		w.null()
		w.null()
		w.null()
	case single:
		w.workTuple(&attempts[0], tokens)
	default:
		w.list(len(attempts))
		for i := range attempts {
			w.workTuple(&attempts[i], tokens)
		}
	}
	w.null()
	return w.result()
}

// workTuple appends one leased unit as get_work reports it; with tokens
// (a client that asked for lease tokens, goworker.go) the tuple has the
// lease token as a fourth element.
func (w *resultWriter) workTuple(a *coordinate.Attempt, tokens bool) {
	if tokens {
		w.tuple(4)
	} else {
		w.tuple(3)
	}
	w.name(a.Spec)
	w.name(a.Key)
	w.data(a.Data)
	if tokens {
		w.b = cborx.AppendInt(w.b, a.ID)
	}
}
