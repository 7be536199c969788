package flow

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
)

func bs(s string) cbor.ByteString { return cbor.ByteString(s) }

const goodFlow = `flows:
  first:
    min_gb: 1
    module: my.tasks
    run_function: run_first
    then: grp.inner
    config:
      my_package: {threads: 4}
      drop: null
  grp:
    inner:
      min_gb: 0.5
      nice: 5
other: ignored
`

func TestParseFlow(t *testing.T) {
	base := map[any]any{bs("coordinate"): map[any]any{bs("address"): []byte("h:1")}, bs("drop"): []byte("x")}
	specs, err := ParseFlow("f.yaml", []byte(goodFlow), base)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].Name != "first" || specs[1].Name != "grp.inner" || specs[1].Line != 12 {
		t.Fatalf("specs = %+v", specs)
	}
	want := map[any]any{
		bs("name"): []byte("first"), bs("min_gb"): 1, bs("module"): []byte("my.tasks"),
		bs("run_function"): []byte("run_first"), bs("then"): []byte("grp.inner"),
		bs("config"): map[any]any{
			bs("coordinate"): map[any]any{bs("address"): []byte("h:1")},
			bs("my_package"): map[any]any{bs("threads"): 4},
		},
	}
	if !reflect.DeepEqual(specs[0].Def, want) {
		t.Errorf("first = %#v\nwant %#v", specs[0].Def, want)
	}
	if c := specs[1].Def[bs("config")]; !reflect.DeepEqual(c, base) {
		t.Errorf("inner config = %v, want the base", c)
	}
	if _, ok := base[bs("my_package")]; ok {
		t.Error("Overlay modified the base")
	}
}

func TestParseFlowErrors(t *testing.T) {
	cases := []struct{ text, want string }{
		{"nope: 1\n", "f.yaml:1: flows: missing"},
		{"flows: [1]\n", "f.yaml:1: flows: invalid work spec flow definition"},
		{"flows:\n  a:\n    min_gb: 1\n    then: b\n", "f.yaml:4: flows.a.then: work spec a chained to invalid work spec b"},
		{"flows:\n  a:\n    min_gb: 1\n    weight: heavy\n", `f.yaml:4: flows.a.weight: "weight" must be`},
		{"flows:\n  a:\n    min_gb: lots\n", "f.yaml:3: flows.a.min_gb: must be a number"},
		{"flows:\n  g:\n    x: 3\n", "f.yaml:3: flows.g.x: invalid work spec flow definition"},
		{"flows:\n  a:\n    min_gb: 1\n    max_running: many\n", `f.yaml:4: flows.a.max_running:`},
		{"flows:\n  a:\n    min_gb: 1\n    config: 3\n", `f.yaml:4: flows.a.config: must be a mapping`},
		{"flows: {a: [\n", "f.yaml: not valid YAML"},
	}
	for _, c := range cases {
		_, err := ParseFlow("f.yaml", []byte(c.text), map[any]any{})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("ParseFlow(%q) = %v, want %q...", c.text, err, c.want)
		}
	}
}

func TestOverlay(t *testing.T) {
	base := map[any]any{bs("a"): map[any]any{bs("x"): 1, bs("y"): 2}, bs("b"): 1}
	got := Overlay(base, map[any]any{"a": map[any]any{bs("y"): nil, bs("z"): 3}, bs("b"): nil, bs("c"): 4})
	want := map[any]any{bs("a"): map[any]any{bs("x"): 1, bs("z"): 3}, bs("c"): 4}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Overlay = %v, want %v", got, want)
	}
}

// TestParseFlowYAML11: the Python CLI read flow files with PyYAML
// (YAML 1.1): `disabled: off` is False and `continuous: yes` True there,
// not the strings "off" (true, so the spec would load paused) and "yes";
// `1e3` (no dot) is a string, `1:30` the integer 90, `0755` octal 493.
// Quoted values stay strings.
func TestParseFlowYAML11(t *testing.T) {
	text := "flows:\n  a:\n    min_gb: 1\n    disabled: off\n    continuous: yes\n    then_preempts: No\n" +
		"    e: 1e3\n    sexa: 1:30\n    oct: 0755\n    f: 1_000.5\n    q: 'off'\n"
	specs, err := ParseFlow("f.yaml", []byte(text), map[any]any{})
	if err != nil {
		t.Fatal(err)
	}
	def := specs[0].Def
	want := map[string]any{
		"disabled": false, "continuous": true, "then_preempts": false,
		"e": []byte("1e3"), "sexa": 90, "oct": 493, "f": 1000.5, "q": []byte("off"),
	}
	for k, w := range want {
		if got := def[bs(k)]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s = %#v, want %#v", k, got, w)
		}
	}
}

// The Python CLI read flow files with PyYAML's yaml.load (FullLoader in
// the PyYAML 5.4 it ran with), which builds Python objects for the
// python/ tags: a tuple, sent as CBOR tag 128; unicode, sent as text even
// when ASCII; str, sent as bytes even when not ASCII. Tags it builds
// something unsendable for, or refuses, are refused here with the field.
func TestParseFlowPythonTags(t *testing.T) {
	text := `defaults: &d
  pair: !!python/tuple [x, 1]
flows:
  s:
    min_gb: 1
    tags: !!python/tuple [a, !!python/tuple [b], [c]]
    empty: !!python/tuple []
    label: !!python/unicode "abc"
    plain: !!python/unicode abc
    bytes: !!python/str "été"
    list: !!python/list [a]
    dict: !!python/dict {k: v}
    config:
      <<: *d
      own: !!python/unicode o
`
	specs, err := ParseFlow("f.yaml", []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	def := specs[0].Def
	want := map[any]any{
		bs("tags"):  cborrpc.Tuple{[]byte("a"), cborrpc.Tuple{[]byte("b")}, []any{[]byte("c")}},
		bs("empty"): cborrpc.Tuple{},
		bs("label"): "abc",
		bs("plain"): "abc",
		bs("bytes"): []byte("été"),
		bs("list"):  []any{[]byte("a")},
		bs("dict"):  map[any]any{bs("k"): []byte("v")},
		bs("config"): map[any]any{
			bs("pair"): cborrpc.Tuple{[]byte("x"), 1},
			bs("own"):  "o",
		},
	}
	for k, w := range want {
		if got := def[k]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s = %#v, want %#v", k, got, w)
		}
	}
	// On the wire: tag 128 and a text string, as the Python CLI sent them.
	enc, err := cborrpc.EncMode().Marshal(def[bs("tags")])
	if err != nil {
		t.Fatal(err)
	}
	if enc[0] != 0xd8 || enc[1] != 128 {
		t.Errorf("tags encode as %x, want tag 128", enc)
	}
	if enc, _ := cborrpc.EncMode().Marshal(def[bs("label")]); enc[0]>>5 != 3 {
		t.Errorf("label encodes as %x, want a text string", enc)
	}

	for _, c := range []struct{ value, want string }{
		{"!!python/tuple {a: 1}", "f.yaml:4: flows.s.bad: !!python/tuple needs a sequence"},
		{"!!python/unicode [a]", "f.yaml:4: flows.s.bad: !!python/unicode needs a scalar"},
		{"!!python/name:os.path.join ''", "f.yaml:4: flows.s.bad: !!python/name:os.path.join"},
		{"!!python/complex 1+2j", "f.yaml:4: flows.s.bad: !!python/complex"},
	} {
		_, err := ParseFlow("f.yaml", []byte("flows:\n  s:\n    min_gb: 1\n    bad: "+c.value+"\n"), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.value, err, c.want)
		}
	}
}
