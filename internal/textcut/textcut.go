// Package textcut shortens client-chosen text for logs, labels and
// messages without splitting a UTF-8 character: a prefix cut inside a
// multi-byte character would leave a broken sequence that a log reader,
// a Prometheus label or a browser shows as garbage or refuses. Each caller
// adds its own marker ("...", "…") after the cut.
package textcut

import "unicode/utf8"

// Prefix returns s cut to at most n bytes, moved back to the start of a
// character that the cut would split: s itself when it is no longer than
// n. Bytes that are not valid UTF-8 count as one character each, so a
// run of stray continuation bytes is cut at n like ASCII, not back to
// nothing.
func Prefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	if utf8.RuneStart(s[n]) {
		return s[:n]
	}
	// s[n] continues a character only if one starts at most
	// utf8.UTFMax-1 bytes back and its encoding reaches past n.
	for p := n - 1; p >= 0 && p > n-utf8.UTFMax; p-- {
		if !utf8.RuneStart(s[p]) {
			continue
		}
		if r, size := utf8.DecodeRuneInString(s[p:]); r != utf8.RuneError || size > 1 {
			if p+size > n {
				return s[:p]
			}
		}
		break
	}
	return s[:n]
}
