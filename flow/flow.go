package flow

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/fxamacker/cbor/v2"
	"gopkg.in/yaml.v3"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/pyvalue"
)

// Spec is one work spec read from a file.
type Spec struct {
	Name string
	// Def is the definition to send: map[any]any with cbor.ByteString keys
	// for ASCII (Python 2 str) keys.
	Def  map[any]any
	Line int // where the spec's mapping starts
}

// Error is a bad file: it names the file, line and field at fault.
type Error struct {
	File  string
	Line  int
	Field string // a dotted path such as "flows.first.weight"; may be empty
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// ReadFlowFile reads a flow file; base is the configuration every spec
// carries (CLI.md §4 step 3), overlaid with the spec's own `config`.
func ReadFlowFile(path string, base map[any]any) ([]Spec, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseFlow(path, text, base)
}

// ParseFlow is ReadFlowFile of text read from file (used in messages).
func ParseFlow(file string, text []byte, base map[any]any) ([]Spec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, &Error{File: file, Msg: "not valid YAML: " + err.Error()}
	}
	pyvalue.ResolveYAML11(&doc) // read as the Python CLI's PyYAML read it
	root := documentRoot(&doc)
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: lineOf(root), Msg: "a flow file is a mapping with a `flows:` key"}
	}
	flows := mappingValue(root, "flows")
	if flows == nil {
		return nil, &Error{File: file, Line: lineOf(root), Field: "flows", Msg: "missing"}
	}
	p := parser{file: file, base: base, byName: map[string]*Spec{}}
	if flows.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: flows.Line, Field: "flows", Msg: "invalid work spec flow definition: not a mapping"}
	}
	if err := p.walk(flows, "", "flows"); err != nil {
		return nil, err
	}
	out := make([]Spec, len(p.specs))
	for i, s := range p.specs {
		if err := p.checkThen(s); err != nil {
			return nil, err
		}
		out[i] = *s
	}
	return out, nil
}

type parser struct {
	file   string
	base   map[any]any
	specs  []*Spec
	byName map[string]*Spec
	nodes  map[*Spec]*yaml.Node
}

func (p *parser) walk(m *yaml.Node, prefix, path string) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		name := prefix + k.Value
		field := path + "." + k.Value
		v = resolveAlias(v)
		if v.Kind != yaml.MappingNode {
			return &Error{File: p.file, Line: v.Line, Field: field, Msg: "invalid work spec flow definition: a spec or a group must be a mapping"}
		}
		v = withMerges(v)
		if !hasKey(v, "min_gb") {
			if err := p.walk(v, name+".", field); err != nil {
				return err
			}
			continue
		}
		spec, err := p.spec(v, name, field)
		if err != nil {
			return err
		}
		p.specs = append(p.specs, spec)
		p.byName[name] = spec
		if p.nodes == nil {
			p.nodes = map[*Spec]*yaml.Node{}
		}
		p.nodes[spec] = v
	}
	return nil
}

// spec builds one definition: name from its path, config from the base.
func (p *parser) spec(n *yaml.Node, name, field string) (*Spec, error) {
	def, err := decodeMapping(n)
	var te *tagError
	if errors.As(err, &te) {
		return nil, &Error{File: p.file, Line: te.line, Field: field + te.path, Msg: te.msg}
	}
	if err != nil {
		return nil, &Error{File: p.file, Line: n.Line, Field: field, Msg: err.Error()}
	}
	def[pyvalue.StringKey("name")] = pyvalue.String(name)
	ownConfig, hasConfig := lookup(def, "config")
	if hasConfig {
		own, ok := ownConfig.(map[any]any)
		if !ok && ownConfig != nil {
			return nil, &Error{File: p.file, Line: keyLine(n, "config"), Field: field + ".config", Msg: "must be a mapping"}
		}
		def[configKey(def)] = Overlay(p.base, own)
	} else {
		def[pyvalue.StringKey("config")] = p.base
	}
	if err := Check(def); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			return nil, &Error{File: p.file, Line: keyLine(n, fe.field), Field: field + "." + fe.field, Msg: fe.msg}
		}
		return nil, &Error{File: p.file, Line: n.Line, Field: field, Msg: err.Error()}
	}
	return &Spec{Name: name, Def: def, Line: n.Line}, nil
}

func (p *parser) checkThen(s *Spec) error {
	then, ok := lookup(s.Def, "then")
	if !ok || then == nil {
		return nil
	}
	name, _ := pyvalue.Text(then)
	if _, ok := p.byName[name]; ok {
		return nil
	}
	n := p.nodes[s]
	return &Error{File: p.file, Line: keyLine(n, "then"), Field: "flows." + s.Name + ".then",
		Msg: fmt.Sprintf("work spec %s chained to invalid work spec %s (not defined in this file)", s.Name, name)}
}

// fieldError is a check failure that names the key at fault.
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

var quotedKey = regexp.MustCompile(`"([^"]+)"`)

// Check applies the Python client's check (a `name` and a numeric
// `min_gb`) and the daemon's own validation of a definition.
func Check(def map[any]any) error {
	if _, ok := lookup(def, "name"); !ok {
		return &fieldError{"name", "missing"}
	}
	mg, ok := lookup(def, "min_gb")
	switch mg.(type) {
	case uint64, int64, int, float64:
	default:
		if !ok {
			return &fieldError{"min_gb", "missing (a work spec needs a numeric min_gb)"}
		}
		return &fieldError{"min_gb", fmt.Sprintf("must be a number, got %s", pyvalue.Repr(mg))}
	}
	enc, err := cborrpc.EncMode().Marshal(def)
	if err != nil {
		return fmt.Errorf("cannot encode: %w", err)
	}
	if _, _, err := coordinate.ParseWorkSpec(coordinate.Data(enc)); err != nil {
		msg := strings.TrimPrefix(err.Error(), coordinate.ErrInvalidWorkSpec.Error()+": ")
		if m := quotedKey.FindStringSubmatch(msg); m != nil {
			return &fieldError{m[1], msg}
		}
		return errors.New(msg)
	}
	return nil
}

// Overlay is yakonfig.overlay_config: base with over merged in
// recursively; a null value in over deletes that key. Neither argument is
// modified.
func Overlay(base, over map[any]any) map[any]any {
	out := make(map[any]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		key := findKey(out, k)
		switch {
		case v == nil:
			delete(out, key)
		default:
			bm, ok1 := out[key].(map[any]any)
			om, ok2 := v.(map[any]any)
			if ok1 && ok2 {
				out[key] = Overlay(bm, om)
			} else {
				delete(out, key)
				out[k] = v
			}
		}
	}
	return out
}

// findKey returns the key of m equal to k as Python 2 compares str and
// unicode (same text), or k.
func findKey(m map[any]any, k any) any {
	if _, ok := m[k]; ok {
		return k
	}
	if s, ok := pyvalue.Text(k); ok {
		for mk := range m {
			if ms, ok := pyvalue.Text(mk); ok && ms == s {
				return mk
			}
		}
	}
	return k
}

func lookup(m map[any]any, key string) (any, bool) {
	if v, ok := m[cbor.ByteString(key)]; ok {
		return v, true
	}
	v, ok := m[key]
	return v, ok
}

func configKey(m map[any]any) any { return findKey(m, cbor.ByteString("config")) }

// decodeMapping decodes a YAML mapping into Python 2 typed values, with
// PyYAML's python/ tags (decodeValue).
func decodeMapping(n *yaml.Node) (map[any]any, error) {
	v, err := decodeValue(n, "")
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[any]any)
	if !ok {
		return nil, errors.New("must be a mapping")
	}
	return m, nil
}

func documentRoot(doc *yaml.Node) *yaml.Node {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		return resolveAlias(doc.Content[0])
	}
	return nil
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// withMerges returns mapping m with its merge keys (`<<: *defaults`, or
// a list of aliases) applied, as PyYAML's loader does for the Python CLI:
// the mapping's own keys win, then the merged mappings' in the order
// given. m itself is returned when it has no merge key.
func withMerges(m *yaml.Node) *yaml.Node {
	if !slices.ContainsFunc(m.Content, isMergeKey) {
		return m
	}
	var own, merged []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if !isMergeKey(k) {
			own = append(own, k, v)
			continue
		}
		sources := []*yaml.Node{resolveAlias(v)}
		if sources[0].Kind == yaml.SequenceNode {
			sources = sources[0].Content
		}
		for _, src := range sources {
			if src = resolveAlias(src); src.Kind == yaml.MappingNode {
				merged = append(merged, withMerges(src).Content...)
			}
		}
	}
	out := *m
	out.Content = own
	seen := map[string]bool{}
	for i := 0; i+1 < len(own); i += 2 {
		seen[own[i].Value] = true
	}
	for i := 0; i+1 < len(merged); i += 2 {
		if k := merged[i]; !seen[k.Value] {
			seen[k.Value] = true
			out.Content = append(out.Content, k, merged[i+1])
		}
	}
	return &out
}

// isMergeKey reports the key of a YAML merge (`<<`).
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "!!merge" || k.Tag == "tag:yaml.org,2002:merge")
}

func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return resolveAlias(m.Content[i+1])
		}
	}
	return nil
}

func keyLine(m *yaml.Node, key string) int {
	if m == nil {
		return 0
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line
		}
	}
	return m.Line
}

func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}
