package flow

import (
	"reflect"
	"testing"

	"github.com/coordinated/coordinated/pyvalue"
)

// YAML merge keys (`<<: *defaults`) are applied before a mapping is told
// to be a spec (it has min_gb) or a group, as PyYAML applies them for the
// Python CLI: a spec that gets min_gb from a merge is a spec named by its
// path, its own keys win, and the merged ones fill in. (The merge key
// used to be read as a child: the spec was refused or named "real.<<".)
func TestMergeKeys(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"own keys beside a merge", `
defaults: &d
  min_gb: 1
  module: m
  run_function: base
flows:
  real:
    <<: *d
    run_function: f
`},
		{"a merge alone", `
defaults: &d
  min_gb: 1
  module: m
  run_function: f
flows:
  real:
    <<: *d
`},
		{"a list of merges, the first wins", `
a: &a
  run_function: f
b: &b
  min_gb: 1
  module: m
  run_function: g
flows:
  real:
    <<: [*a, *b]
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specs, err := ParseFlow("f.yaml", []byte(tc.text), map[any]any{})
			if err != nil {
				t.Fatal(err)
			}
			if len(specs) != 1 || specs[0].Name != "real" {
				t.Fatalf("specs %+v, want one named \"real\"", specs)
			}
			def := specs[0].Def
			for key, want := range map[string]any{"run_function": pyvalue.String("f"), "module": pyvalue.String("m")} {
				if got, ok := lookup(def, key); !ok || !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v (%v), want %#v", key, got, ok, want)
				}
			}
		})
	}
}
