package flow

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fxamacker/cbor/v2"
	"gopkg.in/yaml.v3"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/pyvalue"
)

// The Python CLI read flow files with PyYAML's yaml.load (FullLoader in
// PyYAML 5.4), which builds Python objects for the tags of its
// python/ family. yaml.v3 knows none of them: decoded as it does, a
// !!python/tuple would be sent as a list and a !!python/unicode ASCII
// string as bytes. decodeValue builds what the Python CLI sent:
//
//	!!python/tuple [..]   a tuple: cborrpc.Tuple, CBOR tag 128
//	!!python/list [..]    a list
//	!!python/dict {..}    a dict
//	!!python/unicode s    text (unicode), even when ASCII
//	!!python/str s        bytes (str, UTF-8), even when not ASCII
//
// and refuses the others (numbers under python/ tags, complex, name,
// module, object...), which it does not read as PyYAML did or which the
// Python CLI could not send, rather than send something else.

const (
	pyTagShort = "!!python/"
	pyTagLong  = "tag:yaml.org,2002:python/"
)

// pythonTag returns the part of n's tag after python/ ("tuple"), or "".
func pythonTag(n *yaml.Node) string {
	if t, ok := strings.CutPrefix(n.Tag, pyTagShort); ok {
		return t
	}
	if t, ok := strings.CutPrefix(n.Tag, pyTagLong); ok {
		return t
	}
	return ""
}

// hasPythonTag reports whether n or a node under it (aliases followed)
// has a python/ tag.
func hasPythonTag(n *yaml.Node) bool {
	return hasPythonTagSeen(n, map[*yaml.Node]bool{})
}

func hasPythonTagSeen(n *yaml.Node, seen map[*yaml.Node]bool) bool {
	n = resolveAlias(n)
	if n == nil || seen[n] {
		return false
	}
	seen[n] = true
	if pythonTag(n) != "" {
		return true
	}
	for _, c := range n.Content {
		if hasPythonTagSeen(c, seen) {
			return true
		}
	}
	return false
}

// tagError is a value decodeValue refuses: at line, under the
// mapping it decodes at path (".key.key[index]").
type tagError struct {
	line int
	path string
	msg  string
}

func (e *tagError) Error() string { return fmt.Sprintf("line %d: %s: %s", e.line, e.path, e.msg) }

// decodeValue decodes n into Python 2 typed values (pyvalue.FromYAML),
// with the python/ tags read as PyYAML did; path is where n is, for
// errors (*tagError).
func decodeValue(n *yaml.Node, path string) (any, error) {
	n = resolveAlias(n)
	if !hasPythonTag(n) {
		var raw any
		if err := n.Decode(&raw); err != nil {
			return nil, err
		}
		return pyvalue.FromYAML(raw)
	}
	tag := pythonTag(n)
	switch n.Kind {
	case yaml.SequenceNode:
		if tag != "" && tag != "tuple" && tag != "list" {
			return nil, unsupportedTag(n, path)
		}
		items := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := decodeValue(c, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			items[i] = v
		}
		if tag == "tuple" {
			return cborrpc.Tuple(items), nil
		}
		return items, nil
	case yaml.MappingNode:
		if tag != "" && tag != "dict" {
			return nil, unsupportedTag(n, path)
		}
		m := withMerges(n)
		out := make(map[any]any, len(m.Content)/2)
		for i := 0; i+1 < len(m.Content); i += 2 {
			kn := resolveAlias(m.Content[i])
			k, err := decodeValue(kn, path)
			if err != nil {
				return nil, err
			}
			at := path + "." + kn.Value
			switch kv := k.(type) {
			case []byte:
				k = cbor.ByteString(kv)
			case []any, cborrpc.Tuple, map[any]any:
				return nil, &tagError{kn.Line, at, "unsupported mapping key " + pyvalue.Repr(k)}
			}
			v, err := decodeValue(m.Content[i+1], at)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case yaml.ScalarNode:
		switch tag {
		case "unicode":
			return n.Value, nil
		case "str":
			return []byte(n.Value), nil
		}
		return nil, unsupportedTag(n, path)
	}
	return nil, errors.New("unsupported YAML node")
}

func unsupportedTag(n *yaml.Node, path string) error {
	tag := pyTagShort + pythonTag(n)
	msg := tag + " is not supported (write the value without the tag)"
	switch pythonTag(n) {
	case "tuple", "list":
		msg = tag + " needs a sequence"
	case "dict":
		msg = tag + " needs a mapping"
	case "unicode", "str":
		msg = tag + " needs a scalar"
	}
	return &tagError{n.Line, path, msg}
}
