package textcut

import (
	"strings"
	"testing"
)

func TestPrefix(t *testing.T) {
	const (
		two   = "é" // c3 a9
		three = "€" // e2 82 ac
		four  = "😀" // f0 9f 98 80
	)
	for _, tc := range []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"ascii", "abcdef", 3, "abc"},
		{"on a boundary", "ab" + two, 2, "ab"},
		{"middle of a 2-byte rune", "ab" + two + "c", 3, "ab"},
		{"after a 2-byte rune", "ab" + two + "c", 4, "ab" + two},
		{"1 byte into a 3-byte rune", "a" + three + "b", 2, "a"},
		{"2 bytes into a 3-byte rune", "a" + three + "b", 3, "a"},
		{"1 byte into a 4-byte rune", "a" + four, 2, "a"},
		{"2 bytes into a 4-byte rune", "a" + four, 3, "a"},
		{"3 bytes into a 4-byte rune", "a" + four, 4, "a"},
		{"after a 4-byte rune", four + four, 4, four},
		{"only multi-byte runes", strings.Repeat(three, 10), 10, strings.Repeat(three, 3)},
		{"stray continuation bytes", strings.Repeat("\x80", 10), 4, "\x80\x80\x80\x80"},
		{"invalid lead byte", "a\xff\xfe\xfdb", 3, "a\xff\xfe"},
		{"truncated rune before the cut", "a\xe2\x82bc", 2, "a\xe2"},
		{"stray continuation after a rune", "a" + two + "\xa9b", 3, "a" + two},
		{"overlong encoding", "a\xc0\xafb", 2, "a\xc0"},
		{"cut longer than the string", "ab" + two, 10, "ab" + two},
		{"cut the string's length", "ab" + two, 4, "ab" + two},
		{"cut to nothing", "abc", 0, ""},
		{"negative cut", "abc", -1, ""},
		{"empty string", "", 5, ""},
	} {
		if got := Prefix(tc.s, tc.n); got != tc.want {
			t.Errorf("%s: Prefix(%q, %d) = %q, want %q", tc.name, tc.s, tc.n, got, tc.want)
		}
	}
}
