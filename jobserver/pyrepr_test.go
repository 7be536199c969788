package jobserver

import (
	"testing"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/pyvalue"
)

func TestPyReprName(t *testing.T) {
	cases := []struct {
		name coordinate.Name
		want string
	}{
		{coordinate.Name{Bytes: "ws1"}, `'ws1'`},
		{coordinate.Name{Bytes: "ws1", Text: true}, `u'ws1'`},
		{coordinate.Name{Bytes: ""}, `''`},
		{coordinate.Name{Bytes: "it's"}, `"it's"`},
		{coordinate.Name{Bytes: `it's "x"`}, `'it\'s "x"'`},
		{coordinate.Name{Bytes: `say "hi"`}, `'say "hi"'`},
		{coordinate.Name{Bytes: `back\slash`}, `'back\\slash'`},
		{coordinate.Name{Bytes: "tab\tnl\ncr\r"}, `'tab\tnl\ncr\r'`},
		{coordinate.Name{Bytes: "\x00\xff\x80\x7f"}, `'\x00\xff\x80\x7f'`},
		{coordinate.Name{Bytes: "f\xc3\xbc"}, `'f\xc3\xbc'`},
		{coordinate.Name{Bytes: "fü", Text: true}, `u'f\xfc'`},
		{coordinate.Name{Bytes: "€", Text: true}, `u'\u20ac'`},
		{coordinate.Name{Bytes: "😀", Text: true}, `u'\U0001f600'`},
		{coordinate.Name{Bytes: "it's", Text: true}, `u"it's"`},
		{coordinate.Name{Bytes: "a\x01", Text: true}, `u'a\x01'`},
	}
	for _, c := range cases {
		if got := pyReprName(c.name); got != c.want {
			t.Errorf("pyReprName(%+v) = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestPyFloat(t *testing.T) {
	cases := map[float64]string{
		0:         "0.0",
		1.5:       "1.5",
		-2:        "-2.0",
		300:       "300.0",
		1e15:      "1000000000000000.0",
		1e16:      "1e+16",
		1.5e16:    "1.5e+16",
		0.0001:    "0.0001",
		0.00001:   "1e-05",
		0.1:       "0.1",
		123.456e5: "12345600.0",
	}
	for f, want := range cases {
		if got := pyvalue.Float(f); got != want {
			t.Errorf("pyvalue.Float(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestPyReprValue(t *testing.T) {
	v := []any{[]byte("a"), "b", uint64(3), int64(-4), 1.5, nil, true, []any{}}
	if got, want := pyvalue.Repr(v), `['a', u'b', 3, -4, 1.5, None, True, []]`; got != want {
		t.Errorf("pyReprValue = %s, want %s", got, want)
	}
}

func TestErrorTextLooksLikePython(t *testing.T) {
	if got, want := noSuchMethod("foo").Error(), "AttributeError(\"no such method 'foo'\",)\n"; got != want {
		t.Errorf("noSuchMethod = %q, want %q", got, want)
	}
	if got, want := (&pyError{kind: "KeyError", detail: "name"}).Error(), "KeyError('name',)\n"; got != want {
		t.Errorf("KeyError = %q, want %q", got, want)
	}
}
