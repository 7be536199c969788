package memory

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// Journal records (docs/persistence.md). One record is one committed op of
// one namespace, or the creation of a namespace:
//
//	kind byte | uvarint len(namespace) | namespace | CBOR(body)
//
// The body is the op converted to its record type (record_v2.go): a CBOR
// array of fields, arrays all the way down, so a record holds no field
// names and no API type. The record format is the journal's content
// version (journal.Options.ContentVersion): format 2 is written, format 1
// (record_v1.go) is still read. Records are written under the namespace
// lock, in apply order, and replayed by applying the decoded op to the
// namespace's state. A body with a field too many or too few, an unknown
// kind or bytes after the body fails the replay.

// recordFormat is the record format written, stored by the journal in the
// header of every segment as its content version. Format 1 files report 0.
const recordFormat = 2

// Record kinds. The numbers are on disk: never reuse or renumber one.
const (
	recNamespace byte = 1 + iota // a namespace was created; no op follows
	recSetWorkSpec
	recControlWorkSpec
	recDeleteWorkSpec
	recClear
	recAddWorkUnits
	recPrioritizeWorkUnits
	recDeleteWorkUnits
	recUpdateWorkUnit
	recExpire
	recGetWork
	recArchive
	recHeartbeat
	recUnregisterWorker
	recCancelGroup
	recImportWorkSpec
	recDropUnits // added in format 2: an older build refuses a journal holding one
)

// opKind returns the record kind of an op.
func opKind(o op) byte {
	switch o.(type) {
	case *opSetWorkSpec:
		return recSetWorkSpec
	case *opControlWorkSpec:
		return recControlWorkSpec
	case *opDeleteWorkSpec:
		return recDeleteWorkSpec
	case *opClear:
		return recClear
	case *opAddWorkUnits:
		return recAddWorkUnits
	case *opPrioritizeWorkUnits:
		return recPrioritizeWorkUnits
	case *opDeleteWorkUnits:
		return recDeleteWorkUnits
	case *opUpdateWorkUnit:
		return recUpdateWorkUnit
	case *opExpire:
		return recExpire
	case *opGetWork:
		return recGetWork
	case *opArchive:
		return recArchive
	case *opHeartbeat:
		return recHeartbeat
	case *opUnregisterWorker:
		return recUnregisterWorker
	case *opCancelGroup:
		return recCancelGroup
	case *opImportWorkSpec:
		return recImportWorkSpec
	case *opDropUnits:
		return recDropUnits
	}
	panic(fmt.Sprintf("memory: op %T has no journal record kind", o))
}

// recordEncMode encodes ops. Go strings (keys, spec and worker names) may
// hold any bytes, so they are written as CBOR byte strings: a text string
// must be valid UTF-8 and a binary key would make the record unreadable.
// Core deterministic encoding keeps records byte-identical for identical
// ops.
var recordEncMode = func() cbor.EncMode {
	opts := cbor.CoreDetEncOptions()
	opts.String = cbor.StringToByteString
	em, err := opts.EncMode()
	if err != nil {
		panic(err)
	}
	return em
}()

// recordDecMode decodes record bodies, reading byte strings into Go
// strings. A format 2 body is arrays only (an array of the wrong length is
// an error); the maps of format 1 bodies must hold exactly the frozen
// field names (case-sensitive, no unknown or duplicate key).
var recordDecMode = func() cbor.DecMode {
	dm, err := cbor.DecOptions{
		ByteStringToString: cbor.ByteStringToStringAllowed,
		MaxArrayElements:   1 << 27,
		MaxMapPairs:        1 << 27,
		DupMapKey:          cbor.DupMapKeyEnforcedAPF,
		ExtraReturnErrors:  cbor.ExtraDecErrorUnknownField,
		FieldNameMatching:  cbor.FieldNameMatchingCaseSensitive,
	}.DecMode()
	if err != nil {
		panic(err)
	}
	return dm
}()

// recordEncoder builds records into a reusable buffer. Each namespace owns
// one, used under its lock.
type recordEncoder struct {
	buf     bytes.Buffer
	enc     *cbor.Encoder
	scratch bodyScratch
}

// encode returns the record of op o in namespace ns (o == nil: the
// namespace-creation record). The slice is valid until the next call.
func (e *recordEncoder) encode(ns string, o op) ([]byte, error) {
	e.buf.Reset()
	kind := recNamespace
	if o != nil {
		kind = opKind(o)
	}
	var hdr [1 + binary.MaxVarintLen64]byte
	hdr[0] = kind
	n := 1 + binary.PutUvarint(hdr[1:], uint64(len(ns)))
	e.buf.Write(hdr[:n])
	e.buf.WriteString(ns)
	if o != nil {
		if e.enc == nil {
			e.enc = recordEncMode.NewEncoder(&e.buf)
		}
		err := e.enc.Encode(recordBody(o, &e.scratch))
		e.scratch.reset()
		if err != nil {
			return nil, fmt.Errorf("memory: encoding journal record %T: %w", o, err)
		}
	}
	return e.buf.Bytes(), nil
}

// release drops the buffer after an unusually large record (a whole
// `coordinate load` arrives as one add), so it is not kept for good.
func (e *recordEncoder) release() {
	if e.buf.Cap() > 1<<20 {
		e.buf = bytes.Buffer{}
	}
}

// decodedRecord is a record split into its parts.
type decodedRecord struct {
	namespace string
	op        op // nil for recNamespace
}

var errShortRecord = errors.New("record ends inside its header")

// decodeRecord parses a record written by recordEncoder.encode in record
// format (the journal's content version) format.
func decodeRecord(rec []byte, format uint32) (decodedRecord, error) {
	if len(rec) < 2 {
		return decodedRecord{}, errShortRecord
	}
	kind := rec[0]
	n, w := binary.Uvarint(rec[1:])
	if w <= 0 || uint64(len(rec)-1-w) < n {
		return decodedRecord{}, errShortRecord
	}
	body := rec[1+w:]
	d := decodedRecord{namespace: string(body[:n])}
	body = body[n:]
	if kind == recNamespace {
		if len(body) != 0 {
			return d, fmt.Errorf("namespace record %q carries %d extra bytes", d.namespace, len(body))
		}
		return d, nil
	}
	v := newRecordBody(kind)
	if v == nil {
		return d, fmt.Errorf("unknown record kind %d", kind)
	}
	switch format {
	case recordFormat:
	case 0: // format 1
		if old := newV1Body(kind); old != nil {
			if err := recordDecMode.Unmarshal(body, old); err != nil {
				return d, fmt.Errorf("decoding a format 1 record of kind %d: %w", kind, err)
			}
			var err error
			if v, err = v1ToV2(old); err != nil {
				return d, err
			}
			body = nil
		}
	default:
		return d, fmt.Errorf("record format %d is not one this build reads (1 and %d)", format, recordFormat)
	}
	if body != nil {
		if err := recordDecMode.Unmarshal(body, v); err != nil {
			return d, fmt.Errorf("decoding a record of kind %d: %w", kind, err)
		}
	}
	o, err := bodyOp(v)
	if err != nil {
		return d, err
	}
	d.op = o
	return d, nil
}
