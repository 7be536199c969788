package web

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coordinated/coordinated/coordinate"
)

// A long key's label in the group graph is cut where a character starts:
// the SVG stays UTF-8.
func TestGraphLabelCutsOnACharacter(t *testing.T) {
	key := strings.Repeat("k", 16) + "€€" // the 17-byte cut falls inside the first €
	g := layoutGraph([]*coordinate.WorkUnit{{Spec: coordinate.Name{Bytes: "s"}, Key: coordinate.Name{Bytes: key}}})
	svg := string(g.svg())
	if !utf8.ValidString(svg) {
		t.Errorf("graph SVG is not UTF-8: %q", svg)
	}
	if want := ">" + strings.Repeat("k", 16) + "…</text>"; !strings.Contains(svg, want) {
		t.Errorf("graph SVG has no label %q:\n%s", want, svg)
	}
}
