package pyvalue_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/internal/testdaemon"
	"github.com/coordinated/coordinated/pyvalue"
)

func b(s string) []byte          { return []byte(s) }
func k(s string) cbor.ByteString { return cbor.ByteString(s) }

// cases pairs a Python 2 literal with the value cborrpc decodes it into.
var cases = []struct {
	py     string
	v      any
	noYAML bool // PyYAML's safe_dump cannot represent it (tuples)
}{
	{py: `{'name': 'ws1', 'min_gb': 1, 'module': 'm.tasks', 'config': {'coordinate': {'address': '127.0.0.1:5932'}, 'k': {}}, 'desc': 'loaded by the CLI', 'weight': 20, 'run_params': ['a', 1, 2.5, None, True, [], [1, [2]]], 'empty': {}, 'el': [], 'f': 1e17, 'neg': -1.5, 'big': 12345678901234567890}`,
		v: map[any]any{k("name"): b("ws1"), k("min_gb"): uint64(1), k("module"): b("m.tasks"),
			k("config"): map[any]any{k("coordinate"): map[any]any{k("address"): b("127.0.0.1:5932")}, k("k"): map[any]any{}},
			k("desc"):   b("loaded by the CLI"), k("weight"): uint64(20),
			k("run_params"): []any{b("a"), uint64(1), 2.5, nil, true, []any{}, []any{uint64(1), []any{uint64(2)}}},
			k("empty"):      map[any]any{}, k("el"): []any{}, k("f"): 1e17, k("neg"): -1.5, k("big"): uint64(12345678901234567890)}},
	{py: `{'yes': 'yes', 'num': '123', 'fl': '1.5', 'colon': 'a: b', 'c2': 'a:b', 'hash': 'a #b', 'lead': ' x', 'trail': 'x ', 'multi': 'line1\nline2\n', 'quote': "it's", 'dq': 'say "hi"', 'tab': 'a\tb', 'long': 'word ' * 30 + 'end', 'dash': '- x', 'star': '*x', 'empty': '', 'null': 'null', 'date': '2001-01-01', 'tilde': '~', 'q': '?x', 'pct': '50%'}`,
		v: map[any]any{k("yes"): b("yes"), k("num"): b("123"), k("fl"): b("1.5"), k("colon"): b("a: b"), k("c2"): b("a:b"),
			k("hash"): b("a #b"), k("lead"): b(" x"), k("trail"): b("x "), k("multi"): b("line1\nline2\n"), k("quote"): b("it's"),
			k("dq"): b(`say "hi"`), k("tab"): b("a\tb"), k("long"): b(strings.Repeat("word ", 30) + "end"), k("dash"): b("- x"),
			k("star"): b("*x"), k("empty"): b(""), k("null"): b("null"), k("date"): b("2001-01-01"), k("tilde"): b("~"),
			k("q"): b("?x"), k("pct"): b("50%")}},
	{py: `{u'k': u'v\u00e9', u'n': 1, u'traceback': 'displayed below', u'url': u'http://example.com/' + u'x' * 70, u'l': [u'a' * 30, u'b' * 30, u'c' * 30]}`,
		v: map[any]any{"k": "v\u00e9", "n": uint64(1), "traceback": b("displayed below"), "url": "http://example.com/" + strings.Repeat("x", 70),
			"l": []any{strings.Repeat("a", 30), strings.Repeat("b", 30), strings.Repeat("c", 30)}}},
	{py: `[{'a': [1, [2, 3]], 'b': {'c': 'd'}}, 'x', [['y']]]`,
		v: []any{map[any]any{k("a"): []any{uint64(1), []any{uint64(2), uint64(3)}}, k("b"): map[any]any{k("c"): b("d")}}, b("x"), []any{[]any{b("y")}}}},
	{py: `{'t': ('a', 1), 'one': (1,), 'bytes': '\x00\xff', 'u': u'it\'s', 'neg': -4}`, noYAML: true,
		v: map[any]any{k("t"): cborrpc.Tuple{b("a"), uint64(1)}, k("one"): cborrpc.Tuple{uint64(1)}, k("bytes"): b("\x00\xff"), k("u"): "it's", k("neg"): int64(-4)}},
	{py: `None`, v: nil},
	{py: `'plain'`, v: b("plain")},
	{py: `{'num_workers': 3, 'num_children': 1, 'num_expirable': 3}`,
		v: map[any]any{k("num_workers"): uint64(3), k("num_children"): uint64(1), k("num_expirable"): uint64(3)}},
}

const script = `
import sys, json, pprint, yaml
out = []
for expr in sys.argv[1:]:
    v = eval(expr)
    r = {'repr': repr(v), 'pformat': pprint.pformat(v, indent=4)}
    try:
        r['json'] = json.dumps(v, indent=4, sort_keys=True)
    except Exception as e:
        r['json'] = None
    try:
        r['safe_dump'] = yaml.safe_dump(v)
        r['dump'] = yaml.dump(v)
    except Exception as e:
        r['safe_dump'] = None
    out.append(r)
print(json.dumps(out))
`

// TestMatchesPython2 compares every formatter with Python 2.7 and PyYAML
// 5.4 from the coordinate virtualenv on the same values.
func TestMatchesPython2(t *testing.T) {
	venv := testdaemon.PyVenv(t)
	args := []string{"-c", script}
	for _, c := range cases {
		args = append(args, c.py)
	}
	out, err := exec.Command(filepath.Join(venv, "bin", "python"), args...).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var want []map[string]*string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		w := want[i]
		check := func(what, got string) {
			t.Helper()
			if w[what] == nil {
				return
			}
			if got != *w[what] {
				t.Errorf("%s of %s:\ngot\n%s\nwant\n%s", what, c.py, got, *w[what])
			}
		}
		if strings.HasPrefix(c.py, "{") {
			// Python's repr of a dict is in hash order; ours is sorted.
		} else {
			check("repr", pyvalue.Repr(c.v))
		}
		check("pformat", pyvalue.PFormat(c.v, 4))
		if j, err := pyvalue.JSONDumps(c.v, 4); err == nil {
			check("json", j)
		} else if w["json"] != nil {
			t.Errorf("json of %s: %v", c.py, err)
		}
		if !c.noYAML {
			check("safe_dump", pyvalue.YAMLDump(c.v, true))
			check("dump", pyvalue.YAMLDump(c.v, false))
		}
	}
}
