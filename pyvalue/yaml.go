package pyvalue

import (
	"encoding/base64"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
)

// This file is PyYAML 5.4's dump as the Python 2 coordinate CLI calls it
// (yaml.safe_dump(v, stream) for `work_spec`, yaml.dump(v, stream) for
// `config`): block style, keys sorted, indent 2, width 80, ASCII only. It
// follows PyYAML's Representer and Emitter for the values a work spec or a
// configuration holds: maps, lists, tuples, strings, numbers, booleans,
// None. Complex keys (a map or list as a key, or a key of 128 characters or
// more) are not supported.

// YAMLDump is yaml.safe_dump(v) (safe true) or yaml.dump(v) (safe false).
func YAMLDump(v any, safe bool) string {
	return yamlDump(v, safe, false)
}

// WireYAMLDump is yaml.dump(v) of a value as a Python 2 client decodes it
// from CBOR: its integers are longs, which yaml.dump tags (!!python/long
// '5932'); safe_dump writes longs as plain integers (use YAMLDump).
func WireYAMLDump(v any) string {
	return yamlDump(v, false, true)
}

func yamlDump(v any, safe, longs bool) string {
	e := &emitter{safe: safe, longs: longs, whitespace: true, indention: true, indent: -1}
	e.node(v, true, false, false)
	e.writeIndent()
	if e.openEnded {
		e.writeIndicator("...", true, false, false)
		e.writeIndent()
	}
	return e.b.String()
}

const bestWidth = 80

type emitter struct {
	safe       bool
	longs      bool
	b          strings.Builder
	column     int
	whitespace bool
	indention  bool
	indent     int // -1: none yet
	popIndent  int
	openEnded  bool
}

// scalar is a represented scalar: its text, tag decision and the quoting
// style forced by the representer ("" or "|").
type scalar struct {
	text     string
	implicit bool // a plain rendering would resolve back to the same type
	tag      string
}

// represent turns a leaf value into a scalar (ok false for collections).
func (e *emitter) represent(v any) (scalar, bool) {
	switch x := v.(type) {
	case nil:
		return scalar{text: "null", implicit: true}, true
	case bool:
		if x {
			return scalar{text: "true", implicit: true}, true
		}
		return scalar{text: "false", implicit: true}, true
	case uint64:
		if e.longs {
			return scalar{text: strconv.FormatUint(x, 10), tag: "!!python/long"}, true
		}
		return scalar{text: strconv.FormatUint(x, 10), implicit: true}, true
	case int64:
		if e.longs {
			return scalar{text: strconv.FormatInt(x, 10), tag: "!!python/long"}, true
		}
		return scalar{text: strconv.FormatInt(x, 10), implicit: true}, true
	case int:
		return scalar{text: strconv.Itoa(x), implicit: true}, true
	case float64:
		return scalar{text: yamlFloat(x), implicit: true}, true
	case []byte:
		return e.representStr(string(x)), true
	case cbor.ByteString:
		return e.representStr(string(x)), true
	case string:
		s := scalar{text: x, implicit: resolvesToStr(x)}
		if !e.safe && isASCII(x) {
			s.tag, s.implicit = "!!python/unicode", false
		}
		return s, true
	}
	return scalar{}, false
}

// representStr is PyYAML's handling of a Python 2 str: ASCII or UTF-8
// text is a plain string (yaml.dump tags UTF-8 as !!python/str); anything
// else is !!binary.
func (e *emitter) representStr(s string) scalar {
	if isASCII(s) {
		return scalar{text: s, implicit: resolvesToStr(s)}
	}
	if utf8.ValidString(s) {
		sc := scalar{text: s, implicit: resolvesToStr(s)}
		if !e.safe {
			sc.tag, sc.implicit = "!!python/str", false
		}
		return sc
	}
	enc := base64.StdEncoding.EncodeToString([]byte(s))
	var lines strings.Builder
	for len(enc) > 76 {
		lines.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	lines.WriteString(enc + "\n")
	return scalar{text: lines.String(), tag: "!!binary"}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func yamlFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return ".nan"
	case math.IsInf(f, 1):
		return ".inf"
	case math.IsInf(f, -1):
		return "-.inf"
	}
	s := strings.ToLower(Float(f))
	if !strings.Contains(s, ".") && strings.Contains(s, "e") {
		s = strings.Replace(s, "e", ".0e", 1)
	}
	return s
}

// mapItems returns a map's entries sorted by key, as sort_keys does.
func mapItems(m map[any]any) [][2]any {
	items := make([][2]any, 0, len(m))
	for k, v := range m {
		items = append(items, [2]any{k, v})
	}
	sort.Slice(items, func(i, j int) bool { return pyLess(items[i][0], items[j][0]) })
	return items
}

// pyLess orders keys as Python 2 sorted() does for the usual cases:
// numbers before strings, numbers by value, strings bytewise.
func pyLess(a, b any) bool {
	fa, na := number(a)
	fb, nb := number(b)
	switch {
	case na && nb:
		return fa < fb
	case na != nb:
		return na
	}
	sa, _ := Text(a)
	sb, _ := Text(b)
	return sa < sb
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case uint64:
		return float64(x), true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case nil:
		return math.Inf(-1), true
	}
	return 0, false
}

// Text returns the contents of a str (byte string) or unicode value.
func Text(v any) (string, bool) {
	switch x := v.(type) {
	case []byte:
		return string(x), true
	case cbor.ByteString:
		return string(x), true
	case string:
		return x, true
	}
	return "", false
}

func listOf(v any) (items []any, tuple, ok bool) {
	switch x := v.(type) {
	case []any:
		return x, false, true
	case cbor.Tag:
		if l, ok := x.Content.([]any); ok && x.Number == tagTuple {
			return l, true, true
		}
	}
	if items, ok := tupleItems(v); ok {
		return items, true, true
	}
	return nil, false, false
}

// node emits one node. mapping: it is a mapping value; sequence: a
// sequence item; simpleKey: it is a mapping key.
func (e *emitter) node(v any, root, mapping, simpleKey bool) {
	if m, ok := v.(map[any]any); ok {
		if len(m) == 0 {
			e.writeIndicator("{", true, true, false)
			e.writeIndicator("}", false, false, false)
			return
		}
		e.blockMapping(m)
		return
	}
	if l, tuple, ok := listOf(v); ok {
		if tuple && !e.safe {
			e.writeIndicator("!!python/tuple", true, false, false)
		}
		if len(l) == 0 {
			e.writeIndicator("[", true, true, false)
			e.writeIndicator("]", false, false, false)
			return
		}
		e.blockSequence(l, mapping)
		return
	}
	s, ok := e.represent(v)
	if !ok {
		s = scalar{text: fmt.Sprint(v)}
	}
	if s.tag != "" {
		e.writeIndicator(s.tag, true, false, false)
	}
	e.increaseIndent(true, false)
	e.scalar(s, root, simpleKey)
	e.indent = e.popIndent
}

func (e *emitter) increaseIndent(flow, indentless bool) {
	e.popIndent = e.indent
	switch {
	case e.indent < 0:
		if flow {
			e.indent = 2
		} else {
			e.indent = 0
		}
	case !indentless:
		e.indent += 2
	}
}

func (e *emitter) blockMapping(m map[any]any) {
	saved := e.indent
	e.increaseIndent(false, false)
	for _, kv := range mapItems(m) {
		e.writeIndent()
		e.node(kv[0], false, true, true)
		e.writeIndicator(":", false, false, false)
		e.node(kv[1], false, true, false)
	}
	e.indent = saved
}

func (e *emitter) blockSequence(l []any, mapping bool) {
	saved := e.indent
	e.increaseIndent(false, mapping && !e.indention)
	for _, item := range l {
		e.writeIndent()
		e.writeIndicator("-", true, false, true)
		e.node(item, false, false, false)
	}
	e.indent = saved
}

func (e *emitter) scalar(s scalar, root, simpleKey bool) {
	a := analyzeScalar(s.text)
	style := byte('"')
	switch {
	case s.tag == "!!binary":
		style = '|'
	case s.implicit && !(simpleKey && (a.empty || a.multiline)) && a.allowBlockPlain:
		style = 0
	case a.allowSingleQuoted && !(simpleKey && a.multiline):
		style = '\''
	}
	split := !simpleKey
	switch style {
	case 0:
		if root {
			e.openEnded = true
		}
		e.writePlain(s.text, split)
	case '\'':
		e.writeSingleQuoted(s.text, split)
	case '|':
		e.writeLiteral(s.text)
	default:
		e.writeDoubleQuoted(s.text, split)
	}
}

type analysis struct {
	empty, multiline                   bool
	allowBlockPlain, allowSingleQuoted bool
}

func isSpaceOrBreak(r rune) bool {
	switch r {
	case 0, ' ', '\t', '\r', '\n', 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

func isBreak(r rune) bool { return r == '\n' || r == 0x85 || r == 0x2028 || r == 0x2029 }

// analyzeScalar is PyYAML's Emitter.analyze_scalar (block context only).
func analyzeScalar(s string) analysis {
	if s == "" {
		return analysis{empty: true, allowBlockPlain: true, allowSingleQuoted: true}
	}
	rs := []rune(s)
	var blockIndicators, lineBreaks, special, leadingSpace, leadingBreak, trailingSpace, trailingBreak, breakSpace, spaceBreak bool
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		blockIndicators = true
	}
	precededByWS := true
	followedByWS := len(rs) == 1 || isSpaceOrBreak(rs[1])
	prevSpace, prevBreak := false, false
	for i, ch := range rs {
		if i == 0 {
			if strings.ContainsRune("#,[]{}&*!|>'\"%@`", ch) {
				blockIndicators = true
			}
			if (ch == '?' || ch == ':' || ch == '-') && followedByWS {
				blockIndicators = true
			}
		} else {
			if ch == ':' && followedByWS {
				blockIndicators = true
			}
			if ch == '#' && precededByWS {
				blockIndicators = true
			}
		}
		if isBreak(ch) {
			lineBreaks = true
		}
		if !(ch == '\n' || (ch >= 0x20 && ch <= 0x7e)) {
			// Non-ASCII is special too: allow_unicode is off.
			special = true
		}
		switch {
		case ch == ' ':
			if i == 0 {
				leadingSpace = true
			}
			if i == len(rs)-1 {
				trailingSpace = true
			}
			if prevBreak {
				breakSpace = true
			}
			prevSpace, prevBreak = true, false
		case isBreak(ch):
			if i == 0 {
				leadingBreak = true
			}
			if i == len(rs)-1 {
				trailingBreak = true
			}
			if prevSpace {
				spaceBreak = true
			}
			prevSpace, prevBreak = false, true
		default:
			prevSpace, prevBreak = false, false
		}
		precededByWS = isSpaceOrBreak(ch)
		followedByWS = i+2 >= len(rs) || isSpaceOrBreak(rs[i+2])
	}
	a := analysis{multiline: lineBreaks, allowBlockPlain: true, allowSingleQuoted: true}
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak {
		a.allowBlockPlain = false
	}
	if breakSpace {
		a.allowBlockPlain, a.allowSingleQuoted = false, false
	}
	if spaceBreak || special {
		a.allowBlockPlain, a.allowSingleQuoted = false, false
	}
	if lineBreaks || blockIndicators {
		a.allowBlockPlain = false
	}
	return a
}

func (e *emitter) write(s string) {
	e.b.WriteString(s)
	e.column += utf8.RuneCountInString(s)
}

func (e *emitter) writeIndicator(ind string, needWhitespace, whitespace, indention bool) {
	if !e.whitespace && needWhitespace {
		ind = " " + ind
	}
	e.whitespace = whitespace
	e.indention = e.indention && indention
	e.openEnded = false
	e.write(ind)
}

func (e *emitter) writeIndent() {
	indent := max(e.indent, 0)
	if !e.indention || e.column > indent || (e.column == indent && !e.whitespace) {
		e.writeLineBreak()
	}
	if e.column < indent {
		e.whitespace = true
		e.write(strings.Repeat(" ", indent-e.column))
	}
}

func (e *emitter) writeLineBreak() {
	e.whitespace = true
	e.indention = true
	e.b.WriteByte('\n')
	e.column = 0
}

func (e *emitter) writePlain(t string, split bool) {
	if t == "" {
		return
	}
	if !e.whitespace {
		e.write(" ")
	}
	e.whitespace, e.indention = false, false
	rs := []rune(t)
	spaces := false
	start := 0
	for end := 0; end <= len(rs); end++ {
		var ch rune = -1
		if end < len(rs) {
			ch = rs[end]
		}
		if spaces {
			if ch != ' ' {
				if start+1 == end && e.column > bestWidth && split {
					e.writeIndent()
					e.whitespace, e.indention = false, false
				} else {
					e.write(string(rs[start:end]))
				}
				start = end
			}
		} else if ch == -1 || ch == ' ' || isBreak(ch) {
			e.write(string(rs[start:end]))
			start = end
		}
		if ch != -1 {
			spaces = ch == ' '
		}
	}
}

func (e *emitter) writeSingleQuoted(t string, split bool) {
	e.writeIndicator("'", true, false, false)
	rs := []rune(t)
	spaces, breaks := false, false
	start := 0
	for end := 0; end <= len(rs); end++ {
		var ch rune = -1
		if end < len(rs) {
			ch = rs[end]
		}
		switch {
		case spaces:
			if ch != ' ' {
				if start+1 == end && e.column > bestWidth && split && start != 0 && end != len(rs) {
					e.writeIndent()
				} else {
					e.write(string(rs[start:end]))
				}
				start = end
			}
		case breaks:
			if ch == -1 || !isBreak(ch) {
				if rs[start] == '\n' {
					e.writeLineBreak()
				}
				for range rs[start:end] {
					e.writeLineBreak()
				}
				e.writeIndent()
				start = end
			}
		default:
			if ch == -1 || ch == ' ' || isBreak(ch) || ch == '\'' {
				if start < end {
					e.write(string(rs[start:end]))
					start = end
				}
			}
		}
		if ch == '\'' {
			e.write("''")
			start = end + 1
		}
		if ch != -1 {
			spaces = ch == ' '
			breaks = isBreak(ch)
		}
	}
	e.writeIndicator("'", false, false, false)
}

var yamlEscapes = map[rune]string{
	0: "0", 0x07: "a", 0x08: "b", 0x09: "t", 0x0a: "n", 0x0b: "v", 0x0c: "f",
	0x0d: "r", 0x1b: "e", '"': "\"", '\\': "\\", 0x85: "N", 0xa0: "_",
	0x2028: "L", 0x2029: "P",
}

func (e *emitter) writeDoubleQuoted(t string, split bool) {
	e.writeIndicator("\"", true, false, false)
	rs := []rune(t)
	start := 0
	for end := 0; end <= len(rs); end++ {
		var ch rune = -1
		if end < len(rs) {
			ch = rs[end]
		}
		if ch == -1 || ch == '"' || ch == '\\' || ch == 0x85 || ch == 0x2028 || ch == 0x2029 || ch == 0xfeff || ch < 0x20 || ch > 0x7e {
			if start < end {
				e.write(string(rs[start:end]))
				start = end
			}
			if ch != -1 {
				var data string
				switch esc, ok := yamlEscapes[ch]; {
				case ok:
					data = "\\" + esc
				case ch <= 0xff:
					data = fmt.Sprintf("\\x%02X", ch)
				case ch <= 0xffff:
					data = fmt.Sprintf("\\u%04X", ch)
				default:
					data = fmt.Sprintf("\\U%08X", ch)
				}
				e.write(data)
				start = end + 1
			}
		}
		if end > 0 && end < len(rs)-1 && (ch == ' ' || start >= end) && e.column+(end-start) > bestWidth && split {
			data := string(rs[start:end]) + "\\"
			if start < end {
				start = end
			}
			e.write(data)
			e.writeIndent()
			e.whitespace, e.indention = false, false
			if rs[start] == ' ' {
				e.write("\\")
			}
		}
	}
	e.writeIndicator("\"", false, false, false)
}

// writeLiteral writes a !!binary value's base64 lines as a literal block.
func (e *emitter) writeLiteral(t string) {
	e.writeIndicator("|", true, false, false)
	e.writeLineBreak()
	for _, line := range strings.SplitAfter(strings.TrimSuffix(t, "\n"), "\n") {
		e.writeIndent()
		e.write(strings.TrimSuffix(line, "\n"))
		e.writeLineBreak()
	}
	e.whitespace, e.indention = true, true
}
