package flow

import (
	"errors"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/coordinated/coordinated/pyvalue"
)

// ReadSpecFile reads a single work spec (YAML or JSON), as `coordinate
// load -w FILE` and the `-w FILE` option of other commands do. It is not
// checked: load checks it (Check) before sending; other commands only
// read its name.
func ReadSpecFile(path string) (map[any]any, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, &Error{File: path, Msg: "not valid YAML or JSON: " + err.Error()}
	}
	pyvalue.ResolveYAML11(&doc) // read as the Python CLI's PyYAML read it
	root := documentRoot(&doc)
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, &Error{File: path, Line: lineOf(root), Msg: "a work spec file holds one mapping"}
	}
	def, err := decodeMapping(root)
	if err != nil {
		return nil, &Error{File: path, Line: root.Line, Msg: err.Error()}
	}
	return def, nil
}

// CheckSpecFile is Check with the error located in the file.
func CheckSpecFile(path string, def map[any]any) error {
	err := Check(def)
	var fe *fieldError
	if errors.As(err, &fe) {
		line := 0
		if text, rerr := os.ReadFile(path); rerr == nil {
			var doc yaml.Node
			if yaml.Unmarshal(text, &doc) == nil {
				line = keyLine(documentRoot(&doc), fe.field)
			}
		}
		return &Error{File: path, Line: line, Field: fe.field, Msg: fe.msg}
	}
	if err != nil {
		return &Error{File: path, Msg: err.Error()}
	}
	return nil
}

// Name returns a spec's name as text.
func Name(def map[any]any) (string, bool) {
	v, ok := lookup(def, "name")
	if !ok {
		return "", false
	}
	return pyvalue.Text(v)
}
