package pyvalue

import "strings"

// PFormat is Python 2.7's pprint.pformat(v, indent=indent) with width 80:
// Repr when it fits, otherwise dicts, lists and tuples one entry per line
// (and, with indent > 1, the quirky padding after the opening bracket).
func PFormat(v any, indent int) string {
	p := printer{indent: indent, width: 80, repr: Repr}
	p.format(v, 0, 0)
	return p.b.String()
}

// WirePFormat is PFormat with integers as longs, as WireRepr.
func WirePFormat(v any, indent int) string {
	p := printer{indent: indent, width: 80, repr: WireRepr}
	p.format(v, 0, 0)
	return p.b.String()
}

type printer struct {
	b             strings.Builder
	indent, width int
	repr          func(any) string
}

func (p *printer) format(v any, indent, allowance int) {
	rep := p.repr(v)
	sepLines := len(rep) > p.width-1-indent-allowance
	if m, ok := v.(map[any]any); ok {
		p.b.WriteByte('{')
		if p.indent > 1 {
			p.b.WriteString(strings.Repeat(" ", p.indent-1))
		}
		if len(m) > 0 {
			indent += p.indent
			for i, kv := range reprSorted(m) {
				krep := p.repr(kv[0])
				switch {
				case i == 0:
					p.b.WriteString(krep + ": ")
				case sepLines:
					p.b.WriteString(",\n" + strings.Repeat(" ", indent) + krep + ": ")
				default:
					p.b.WriteString(", " + krep + ": ")
				}
				p.format(kv[1], indent+len(krep)+2, allowance+1)
			}
		}
		p.b.WriteByte('}')
		return
	}
	if l, tuple, ok := listOf(v); ok {
		open, end := "[", "]"
		if tuple {
			open, end = "(", ")"
		}
		p.b.WriteString(open)
		if p.indent > 1 && sepLines {
			p.b.WriteString(strings.Repeat(" ", p.indent-1))
		}
		if len(l) > 0 {
			indent += p.indent
			for i, e := range l {
				if i > 0 {
					if sepLines {
						p.b.WriteString(",\n" + strings.Repeat(" ", indent))
					} else {
						p.b.WriteString(", ")
					}
				}
				p.format(e, indent, allowance+1)
			}
		}
		if tuple && len(l) == 1 {
			p.b.WriteByte(',')
		}
		p.b.WriteString(end)
		return
	}
	p.b.WriteString(rep)
}

// reprSorted orders a dict's entries as pprint does (sorted by key).
func reprSorted(m map[any]any) [][2]any { return mapItems(m) }
