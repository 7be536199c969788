package pyvalue

import (
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
)

// pyQuote picks Python's quote character: single quotes unless the string
// contains a single quote and no double quote.
func quote(s string) byte {
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		return '"'
	}
	return '\''
}

// ReprBytes is Python 2 repr() of a str (byte string).
func ReprBytes(s string) string {
	q := quote(s)
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(q)
	for i := 0; i < len(s); i++ {
		writeEscapedByte(&b, s[i], q)
	}
	b.WriteByte(q)
	return b.String()
}

// ReprUnicode is Python 2 repr() of a unicode string given as UTF-8.
// Python 2 escapes every non-ASCII code point (\xNN, \uNNNN, \UNNNNNNNN).
// Bytes that are not valid UTF-8 (which a CBOR text string cannot carry)
// are shown as \xNN so nothing is lost.
func ReprUnicode(s string) string {
	q := quote(s)
	var b strings.Builder
	b.Grow(len(s) + 3)
	b.WriteByte('u')
	b.WriteByte(q)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r < utf8.RuneSelf || (r == utf8.RuneError && size == 1):
			writeEscapedByte(&b, s[i], q)
		case r <= 0xff:
			b.WriteString(`\x`)
			writeHex(&b, uint64(r), 2)
		case r <= 0xffff:
			b.WriteString(`\u`)
			writeHex(&b, uint64(r), 4)
		default:
			b.WriteString(`\U`)
			writeHex(&b, uint64(r), 8)
		}
		i += size
	}
	b.WriteByte(q)
	return b.String()
}

func writeEscapedByte(b *strings.Builder, c byte, q byte) {
	switch {
	case c == q || c == '\\':
		b.WriteByte('\\')
		b.WriteByte(c)
	case c == '\t':
		b.WriteString(`\t`)
	case c == '\n':
		b.WriteString(`\n`)
	case c == '\r':
		b.WriteString(`\r`)
	case c < 0x20 || c >= 0x7f:
		b.WriteString(`\x`)
		writeHex(b, uint64(c), 2)
	default:
		b.WriteByte(c)
	}
}

func writeHex(b *strings.Builder, v uint64, width int) {
	const digits = "0123456789abcdef"
	for shift := (width - 1) * 4; shift >= 0; shift -= 4 {
		b.WriteByte(digits[(v>>uint(shift))&0xf])
	}
}

// Repr renders a decoded CBOR value like Python 2 repr(): lists [..],
// tuples (..) (cborrpc.Tuple or a tag-128 cbor.Tag), dicts {..} with
// their entries sorted (Python 2's order is its hash order), None,
// True/False, numbers, byte and text strings.
func Repr(v any) string {
	var b strings.Builder
	r := reprer{b: &b}
	r.write(v)
	return b.String()
}

// WireRepr is Repr of a value as a Python 2 client holds it after
// decoding it from CBOR: every integer is a long (1L).
func WireRepr(v any) string {
	var b strings.Builder
	r := reprer{b: &b, longs: true}
	r.write(v)
	return b.String()
}

type reprer struct {
	b     *strings.Builder
	longs bool
}

func (r reprer) write(v any) { writePyRepr(r.b, v, r.longs) }

func writePyRepr(b *strings.Builder, v any, longs bool) {
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case uint64:
		b.WriteString(strconv.FormatUint(x, 10))
		if longs || x > math.MaxInt64 {
			b.WriteByte('L') // a Python 2 long
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
		if longs {
			b.WriteByte('L')
		}
	case big.Int:
		b.WriteString(x.String() + "L")
	case *big.Int:
		b.WriteString(x.String() + "L")
	case float64:
		b.WriteString(Float(x))
	case float32:
		b.WriteString(Float(float64(x)))
	case []byte:
		b.WriteString(ReprBytes(string(x)))
	case cbor.ByteString:
		b.WriteString(ReprBytes(string(x)))
	case string:
		b.WriteString(ReprUnicode(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writePyRepr(b, e, longs)
		}
		b.WriteByte(']')
	case cbor.Tag:
		if x.Number == tagTuple {
			if items, ok := x.Content.([]any); ok {
				writeTuple(b, items, longs)
				return
			}
		}
		b.WriteString("CBORTag(" + strconv.FormatUint(x.Number, 10) + ", ")
		writePyRepr(b, x.Content, longs)
		b.WriteByte(')')
	case map[any]any:
		// Python 2 dict order is its hash order; sort by key for stable
		// output (pprint sorts the same way).
		b.WriteByte('{')
		for i, kv := range mapItems(x) {
			if i > 0 {
				b.WriteString(", ")
			}
			writePyRepr(b, kv[0], longs)
			b.WriteString(": ")
			writePyRepr(b, kv[1], longs)
		}
		b.WriteByte('}')
	default:
		if items, ok := tupleItems(v); ok {
			writeTuple(b, items, longs)
			return
		}
		b.WriteString("<?>")
	}
}

func writeTuple(b *strings.Builder, items []any, longs bool) {
	b.WriteByte('(')
	for i, e := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		writePyRepr(b, e, longs)
	}
	if len(items) == 1 {
		b.WriteByte(',')
	}
	b.WriteByte(')')
}

// tagTuple is the CBOR tag of a Python tuple (PROTOCOL §5.1).
const tagTuple = 128

// tupleItems recognises cborrpc.Tuple (a []any type named Tuple) without
// importing cborrpc, which sits on a floor above this package
// (docs/architecture.md).
func tupleItems(v any) ([]any, bool) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Slice || rv.Type().Name() != "Tuple" || rv.Type().Elem().Kind() != reflect.Interface {
		return nil, false
	}
	items := make([]any, rv.Len())
	for i := range items {
		items[i] = rv.Index(i).Interface()
	}
	return items, true
}
