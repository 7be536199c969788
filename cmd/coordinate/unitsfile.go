package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"strings"
)

// Units files (docs/spec/CLI.md §5): one JSON object per line mapping unit
// keys to data; blank lines and lines starting with # are skipped; "-" is
// stdin; a .gz suffix means gzip. They are read twice, streaming: once to
// check every line (so a bad line stops the command before anything is
// sent), once to send. Stdin is spooled to a temporary file for that.

// maxLine bounds one line of a units file.
const maxLine = 64 << 20

type unitsFile struct {
	path    string
	display string // what Python's `loading work units from {0!r}` showed
	spool   string // temporary copy of stdin, removed by close
}

func (a *app) openUnitsFile(path string) (*unitsFile, error) {
	u := &unitsFile{path: path}
	switch {
	case path == "-":
		f, err := os.CreateTemp("", "coordinate-units-*")
		if err != nil {
			return nil, err
		}
		u.spool = f.Name()
		_, err = io.Copy(f, a.stdin)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			u.close()
			return nil, fmt.Errorf("reading units from stdin: %w", err)
		}
		u.display = "<open file '<stdin>', mode 'r' at 0x7f0000000000>"
	case strings.HasSuffix(path, ".gz"):
		u.display = fmt.Sprintf("<gzip open file %s, mode 'rb' at 0x7f0000000000 0x7f0000000000>", pyQuoted(path))
	default:
		u.display = fmt.Sprintf("<open file %s, mode 'r' at 0x7f0000000000>", pyQuoted(path))
	}
	if u.spool == "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	return u, nil
}

func (u *unitsFile) close() {
	if u.spool != "" {
		os.Remove(u.spool)
	}
}

func (u *unitsFile) name() string {
	if u.path == "-" {
		return "<stdin>"
	}
	return u.path
}

// open returns a fresh reader of the file's text.
func (u *unitsFile) open() (io.ReadCloser, error) {
	path := u.path
	if u.spool != "" {
		path = u.spool
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(u.path, ".gz") {
		return f, nil
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", u.path, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, f}, nil
}

// unit is one key/data pair read from a units file.
type unit struct {
	key  string // text: the Python CLI's keys come from json.loads
	data any
}

// lineError is a bad line of a units file.
type lineError struct {
	file string
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.msg) }

// scan calls fn for each good line's units and the line's length; a bad
// line goes to bad (and scanning goes on) when bad is set, else it stops
// the scan.
func (u *unitsFile) scan(fn func(units []unit, size int) error, bad func(*lineError)) error {
	r, err := u.open()
	if err != nil {
		return err
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		units, err := parseUnitsLine(line)
		if err != nil {
			le := &lineError{file: u.name(), line: lineNo, msg: err.Error()}
			if bad == nil {
				return le
			}
			bad(le)
			continue
		}
		if err := fn(units, len(line)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &lineError{file: u.name(), line: lineNo + 1, msg: fmt.Sprintf("line longer than %d bytes", maxLine)}
		}
		return fmt.Errorf("%s: %w", u.name(), err)
	}
	return nil
}

func parseUnitsLine(line []byte) ([]unit, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("not a JSON object {\"key\": data, ...} but a JSON %s", te.Value)
		}
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("not valid JSON: extra data after the object")
	}
	if obj == nil {
		return nil, errors.New("not a JSON object {\"key\": data, ...} but null")
	}
	units := make([]unit, 0, len(obj))
	for k, v := range obj {
		units = append(units, unit{key: k, data: pyJSON(v)})
	}
	return units, nil
}

// pyJSON types a decoded JSON value as Python 2's json.loads did: every
// string unicode (CBOR text), integers as integers, others as floats.
func pyJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		s := x.String()
		if !strings.ContainsAny(s, ".eE") {
			if n, err := x.Int64(); err == nil {
				return n
			}
			if b, ok := new(big.Int).SetString(s, 10); ok {
				return b
			}
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		out := make(map[any]any, len(x))
		for k, e := range x {
			out[k] = pyJSON(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = pyJSON(e)
		}
		return x
	}
	return v
}

// pyQuoted is Python repr() of a file name.
func pyQuoted(s string) string {
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}
