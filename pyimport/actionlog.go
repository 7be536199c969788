package pyimport

import (
	"errors"
	"fmt"
	"io"
)

// Action is one record of a Python action log: what JobQueue._log_action
// wrote, [action, args], with where it was read.
type Action struct {
	File   string
	Offset int64
	Name   string // set_work_spec, del_work_spec, add_work_unit, update_work_unit, del_work_units
	Args   []item
}

// actionArity is how many args each known action takes.
var actionArity = map[string]int{
	"set_work_spec":    1, // (work_spec,)
	"del_work_spec":    1, // (work_spec_name,)
	"add_work_unit":    3, // (work_spec_name, key, data)
	"update_work_unit": 3, // (work_spec_name, key, options)
	"del_work_units":   2, // (work_spec_name, options)
}

// LogResult is what ReadLog read from one log.
type LogResult struct {
	Actions []Action
	// Truncated is set when the file ends inside a record, as the newest
	// log of a Python daemon that was stopped usually does (it buffers its
	// writes); TruncatedAt is that record's offset.
	Truncated   bool
	TruncatedAt int64
}

// ReadLog parses an uncompressed action log. Every record is checked
// before any is applied: an unknown action or a record of the wrong
// shape is a *FormatError naming the file and offset. A file ending
// inside a record is reported in the result, not as an error; the caller
// decides whether that is acceptable.
func ReadLog(file string, r io.Reader) (*LogResult, error) {
	res := &LogResult{}
	ir := newItemReader(file, r)
	for {
		v, err := ir.next()
		if errors.Is(err, io.EOF) {
			return res, nil
		}
		var trunc *truncatedError
		if errors.As(err, &trunc) {
			res.Truncated, res.TruncatedAt = true, trunc.Offset
			return res, nil
		}
		if err != nil {
			return nil, err
		}
		rec, ok := array(v)
		if !ok || len(rec) != 2 {
			return nil, ir.errorf("expected an [action, args] record, got %s", describe(v))
		}
		nm, ok := name(rec[0])
		if !ok {
			return nil, ir.errorf("the action must be a string, got %s", describe(rec[0]))
		}
		arity, known := actionArity[nm.Bytes]
		if !known {
			return nil, ir.errorf("unknown action %q", nm.Bytes)
		}
		args, ok := array(rec[1])
		if !ok || len(args) != arity {
			return nil, ir.errorf("%s: expected %d arguments, got %s", nm.Bytes, arity, describeArgs(rec[1], args, ok))
		}
		res.Actions = append(res.Actions, Action{File: file, Offset: ir.off, Name: nm.Bytes, Args: args})
	}
}

func describeArgs(v item, args []item, isArray bool) string {
	if !isArray {
		return describe(v)
	}
	return fmt.Sprintf("%d", len(args))
}

func (a *Action) errorf(format string, args ...any) *FormatError {
	return &FormatError{File: a.File, Offset: a.Offset, Msg: a.Name + ": " + fmt.Sprintf(format, args...)}
}
