package web

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/textcut"
)

// A group's dependency graph as SVG: units in columns by depth (a unit
// sits one column right of its deepest dependency in the group), edges
// from a dependency to its dependent. DependsOn lists only dependencies
// not yet FINISHED, so finished edges are not drawn. A failed root (a
// FAILED unit none of whose dependencies failed) is outlined in red: it is
// what made its dependents fail.

type graphNode struct {
	ref        coordinate.UnitRef
	status     coordinate.Status
	depth, row int
	failedRoot bool
	external   bool // a dependency outside the group (or not loaded)
}

type graph struct {
	nodes       []*graphNode
	edges       [][2]*graphNode // from dependency to dependent
	failedRoots []coordinate.UnitRef
}

const (
	nodeW, nodeH = 150, 28
	colGap       = 60
	rowGap       = 14
	pad          = 10
)

func layoutGraph(units []*coordinate.WorkUnit) *graph {
	g := &graph{}
	byRef := map[coordinate.UnitRef]*graphNode{}
	deps := map[*graphNode][]*graphNode{}
	for _, u := range units {
		n := &graphNode{ref: coordinate.UnitRef{Spec: u.Spec.Bytes, Key: u.Key.Bytes}, status: u.Status}
		byRef[n.ref] = n
		g.nodes = append(g.nodes, n)
	}
	for _, u := range units {
		n := byRef[coordinate.UnitRef{Spec: u.Spec.Bytes, Key: u.Key.Bytes}]
		for _, d := range u.DependsOn {
			dn := byRef[d]
			if dn == nil {
				dn = &graphNode{ref: d, external: true}
				byRef[d] = dn
				g.nodes = append(g.nodes, dn)
			}
			deps[n] = append(deps[n], dn)
			g.edges = append(g.edges, [2]*graphNode{dn, n})
		}
	}
	// Depth by longest path; a cycle cannot occur (AddWorkUnits refuses
	// one), but the iteration is bounded anyway.
	for range len(g.nodes) {
		changed := false
		for n, ds := range deps {
			for _, d := range ds {
				if d.depth+1 > n.depth {
					n.depth, changed = d.depth+1, true
				}
			}
		}
		if !changed {
			break
		}
	}
	rows := map[int]int{}
	for _, n := range g.nodes {
		n.row = rows[n.depth]
		rows[n.depth]++
		if n.status == coordinate.StatusFailed {
			n.failedRoot = true
			for _, d := range deps[n] {
				if d.status == coordinate.StatusFailed {
					n.failedRoot = false
				}
			}
			if n.failedRoot {
				g.failedRoots = append(g.failedRoots, n.ref)
			}
		}
	}
	return g
}

func (n *graphNode) x() int { return pad + n.depth*(nodeW+colGap) }
func (n *graphNode) y() int { return pad + n.row*(nodeH+rowGap) }

// svg draws the graph; each node links to its unit's page.
func (g *graph) svg() template.HTML {
	w, h := 0, 0
	for _, n := range g.nodes {
		w, h = max(w, n.x()+nodeW+pad), max(h, n.y()+nodeH+pad)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="group-graph" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="dependency graph">`, w, h, w, h)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>`)
	for _, e := range g.edges {
		fmt.Fprintf(&b, `<line class="edge" x1="%d" y1="%d" x2="%d" y2="%d" marker-end="url(#arrow)"/>`,
			e[0].x()+nodeW, e[0].y()+nodeH/2, e[1].x(), e[1].y()+nodeH/2)
	}
	for _, n := range g.nodes {
		class := "node st-" + n.status.String()
		if n.external {
			class = "node external"
		}
		if n.failedRoot {
			class += " failed-root"
		}
		label := n.ref.Key
		if len(label) > 18 {
			label = textcut.Prefix(label, 17) + "…"
		}
		href := "/ui/unit" + string(queryString("spec", n.ref.Spec, "key", n.ref.Key))
		fmt.Fprintf(&b, `<a href="%s"><g class="%s"><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" rx="4"/><text x="%d" y="%d">%s</text></g></a>`,
			template.HTMLEscapeString(href), class,
			template.HTMLEscapeString(n.ref.Spec+"/"+n.ref.Key+" ("+statusLabel(n)+")"),
			n.x(), n.y(), nodeW, nodeH, n.x()+6, n.y()+18, template.HTMLEscapeString(label))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func statusLabel(n *graphNode) string {
	if n.external {
		return "outside the group"
	}
	s := n.status.String()
	if n.failedRoot {
		s += ", failed root"
	}
	return s
}
