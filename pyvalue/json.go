package pyvalue

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JSONDumps is Python 2.7's json.dumps(v, indent=indent, sort_keys=sortKeys)
// (indent < 0: no indent): separators ", " and ": " (so indented lines end
// in ", "), ASCII output with \uXXXX escapes, byte strings read as UTF-8,
// tuples as arrays. Unsorted maps come out sorted too (Python's order is
// its hash order).
func JSONDumps(v any, indent int) (string, error) {
	var b strings.Builder
	if err := writeJSON(&b, v, indent, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeJSON(b *strings.Builder, v any, indent, level int) error {
	newline := func(l int) {
		if indent >= 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(" ", indent*l))
		}
	}
	if m, ok := v.(map[any]any); ok {
		if len(m) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		for i, kv := range mapItems(m) {
			if i > 0 {
				b.WriteString(", ")
			}
			newline(level + 1)
			k, err := jsonKey(kv[0])
			if err != nil {
				return err
			}
			writeJSONString(b, k)
			b.WriteString(": ")
			if err := writeJSON(b, kv[1], indent, level+1); err != nil {
				return err
			}
		}
		newline(level)
		b.WriteByte('}')
		return nil
	}
	if l, _, ok := listOf(v); ok {
		if len(l) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, e := range l {
			if i > 0 {
				b.WriteString(", ")
			}
			newline(level + 1)
			if err := writeJSON(b, e, indent, level+1); err != nil {
				return err
			}
		}
		newline(level)
		b.WriteByte(']')
		return nil
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case uint64:
		b.WriteString(strconv.FormatUint(x, 10))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case int:
		b.WriteString(strconv.Itoa(x))
	case float64:
		b.WriteString(jsonFloat(x))
	default:
		s, ok := Text(v)
		if !ok {
			return fmt.Errorf("%s is not JSON serializable", Repr(v))
		}
		if !utf8.ValidString(s) {
			return fmt.Errorf("'utf8' codec can't decode %s", Repr(v))
		}
		writeJSONString(b, s)
	}
	return nil
}

func jsonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return Float(f)
}

// jsonKey converts a map key as Python's json does: strings as they are,
// numbers, booleans and None to their JSON text.
func jsonKey(k any) (string, error) {
	if s, ok := Text(k); ok {
		return s, nil
	}
	switch x := k.(type) {
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(x), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int:
		return strconv.Itoa(x), nil
	case float64:
		return jsonFloat(x), nil
	}
	return "", fmt.Errorf("key %s is not a string", Repr(k))
}

func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (r > 0x7e && r <= 0xffff):
				fmt.Fprintf(b, `\u%04x`, r)
			case r > 0xffff:
				r -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
