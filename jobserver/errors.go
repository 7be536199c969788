package jobserver

import (
	"fmt"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/pyvalue"
)

// pyError is an RPC-level failure (PROTOCOL §3.3). Its text imitates the
// first line of the Python daemon's error message, `Kind('detail',)` and a
// newline, so logs and client tracebacks look the same as before.
type pyError struct {
	kind   string // Python exception class, e.g. "TypeError"
	detail string
}

func (e *pyError) Error() string {
	return e.kind + "(" + pyvalue.ReprBytes(e.detail) + ",)\n"
}

// typeError reports a parameter of the wrong type or a wrong parameter count.
func typeError(format string, args ...any) error {
	return &pyError{kind: "TypeError", detail: fmt.Sprintf(format, args...)}
}

// valueError reports a parameter with the right type but an unusable value.
func valueError(format string, args ...any) error {
	return &pyError{kind: "ValueError", detail: fmt.Sprintf(format, args...)}
}

// noSuchMethod is the reply to an unknown method name (PROTOCOL §7, §8.26).
func noSuchMethod(name string) error {
	return &pyError{kind: "AttributeError", detail: fmt.Sprintf("no such method %s", pyvalue.ReprBytes(name))}
}

// backendError logs an unexpected backend failure and wraps it so the
// client sees the method concerned.
func (js *JobServer) backendError(method string, err error) error {
	js.log.Error("backend failure", "method", method, "error", cborrpc.LogValue(err.Error()))
	return &pyError{kind: "Exception", detail: fmt.Sprintf("%s: %v", method, err)}
}
