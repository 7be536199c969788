package coordinatetest

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// m is a CBOR map with text-string keys, for writing definitions and data.
type m = map[string]any

// tuple builds a Python tuple: CBOR tag 128 around an array.
func tuple(items ...any) cbor.Tag { return cbor.Tag{Number: 128, Content: items} }

// enc encodes v as one CBOR item. A Go string encodes as a text string,
// []byte and cbor.ByteString as byte strings.
func enc(t testing.TB, v any) coordinate.Data {
	t.Helper()
	b, err := cbor.Marshal(v)
	if err != nil {
		t.Fatalf("coordinatetest: encoding %#v: %v", v, err)
	}
	return coordinate.Data(b)
}

// decode decodes one CBOR item into a normal form that compares with
// reflect.DeepEqual: maps become map[string]any (byte and text keys alike),
// byte and text strings become string, integers int64, tag 128 a []any.
func decode(t testing.TB, d coordinate.Data) any {
	t.Helper()
	var v any
	if err := cbor.Unmarshal(d, &v); err != nil {
		t.Fatalf("coordinatetest: decoding CBOR %x: %v", []byte(d), err)
	}
	return normalize(v)
}

func normalize(v any) any {
	switch x := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[fmt.Sprint(normalize(k))] = normalize(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = normalize(val)
		}
		return out
	case cbor.Tag:
		if x.Number == 128 {
			return normalize(x.Content)
		}
		return cbor.Tag{Number: x.Number, Content: normalize(x.Content)}
	case cbor.ByteString:
		return string(x)
	case []byte:
		return string(x)
	case uint64:
		return int64(x)
	}
	return v
}

// sameData reports whether got decodes to the same value as want (a Go
// value, encoded first) does.
func sameData(t testing.TB, got coordinate.Data, want any) bool {
	t.Helper()
	if got == nil {
		return false
	}
	return reflect.DeepEqual(decode(t, got), decode(t, enc(t, want)))
}

// checkData fails the test unless got decodes to want.
func checkData(t testing.TB, what string, got coordinate.Data, want any) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: data is nil, want %#v", what, want)
		return
	}
	if !sameData(t, got, want) {
		t.Errorf("%s: data = %#v, want %#v", what, decode(t, got), decode(t, enc(t, want)))
	}
}

// checkBytes fails the test unless got is exactly want, byte for byte.
func checkBytes(t testing.TB, what string, got, want coordinate.Data) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s: bytes = %x, want %x (verbatim)", what, []byte(got), []byte(want))
	}
}

// dataField returns the string value of key in a CBOR map, or "" when the
// data is not a map or lacks a string under key.
func dataField(t testing.TB, d coordinate.Data, key string) string {
	t.Helper()
	mp, ok := decode(t, d).(map[string]any)
	if !ok {
		return ""
	}
	s, _ := mp[key].(string)
	return s
}

// sortedKeys returns the keys of a map for stable error messages.
func sortedKeys[V any](mp map[string]V) []string {
	out := make([]string, 0, len(mp))
	for k := range mp {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
