package main

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

func pb(s string) []byte          { return []byte(s) }
func pk(s string) cbor.ByteString { return cbor.ByteString(s) }

// cases pairs a Python 2 literal with the value cborrpc decodes it into.
var pyvalueCases = []struct {
	py     string
	v      any
	noYAML bool // PyYAML's safe_dump cannot represent it (tuples)
}{
	{py: `{'name': 'ws1', 'min_gb': 1, 'module': 'm.tasks', 'config': {'coordinate': {'address': '127.0.0.1:5932'}, 'k': {}}, 'desc': 'loaded by the CLI', 'weight': 20, 'run_params': ['a', 1, 2.5, None, True, [], [1, [2]]], 'empty': {}, 'el': [], 'f': 1e17, 'neg': -1.5, 'big': 12345678901234567890}`,
		v: map[any]any{pk("name"): pb("ws1"), pk("min_gb"): uint64(1), pk("module"): pb("m.tasks"),
			pk("config"): map[any]any{pk("coordinate"): map[any]any{pk("address"): pb("127.0.0.1:5932")}, pk("k"): map[any]any{}},
			pk("desc"):   pb("loaded by the CLI"), pk("weight"): uint64(20),
			pk("run_params"): []any{pb("a"), uint64(1), 2.5, nil, true, []any{}, []any{uint64(1), []any{uint64(2)}}},
			pk("empty"):      map[any]any{}, pk("el"): []any{}, pk("f"): 1e17, pk("neg"): -1.5, pk("big"): uint64(12345678901234567890)}},
	{py: `{'yes': 'yes', 'num': '123', 'fl': '1.5', 'colon': 'a: b', 'c2': 'a:b', 'hash': 'a #b', 'lead': ' x', 'trail': 'x ', 'multi': 'line1\nline2\n', 'quote': "it's", 'dq': 'say "hi"', 'tab': 'a\tb', 'long': 'word ' * 30 + 'end', 'dash': '- x', 'star': '*x', 'empty': '', 'null': 'null', 'date': '2001-01-01', 'tilde': '~', 'q': '?x', 'pct': '50%'}`,
		v: map[any]any{pk("yes"): pb("yes"), pk("num"): pb("123"), pk("fl"): pb("1.5"), pk("colon"): pb("a: b"), pk("c2"): pb("a:b"),
			pk("hash"): pb("a #b"), pk("lead"): pb(" x"), pk("trail"): pb("x "), pk("multi"): pb("line1\nline2\n"), pk("quote"): pb("it's"),
			pk("dq"): pb(`say "hi"`), pk("tab"): pb("a\tb"), pk("long"): pb(strings.Repeat("word ", 30) + "end"), pk("dash"): pb("- x"),
			pk("star"): pb("*x"), pk("empty"): pb(""), pk("null"): pb("null"), pk("date"): pb("2001-01-01"), pk("tilde"): pb("~"),
			pk("q"): pb("?x"), pk("pct"): pb("50%")}},
	{py: `{u'k': u'v\u00e9', u'n': 1, u'traceback': 'displayed below', u'url': u'http://example.com/' + u'x' * 70, u'l': [u'a' * 30, u'b' * 30, u'c' * 30]}`,
		v: map[any]any{"k": "v\u00e9", "n": uint64(1), "traceback": pb("displayed below"), "url": "http://example.com/" + strings.Repeat("x", 70),
			"l": []any{strings.Repeat("a", 30), strings.Repeat("b", 30), strings.Repeat("c", 30)}}},
	{py: `[{'a': [1, [2, 3]], 'b': {'c': 'd'}}, 'x', [['y']]]`,
		v: []any{map[any]any{pk("a"): []any{uint64(1), []any{uint64(2), uint64(3)}}, pk("b"): map[any]any{pk("c"): pb("d")}}, pb("x"), []any{[]any{pb("y")}}}},
	{py: `{'t': ('a', 1), 'one': (1,), 'bytes': '\x00\xff', 'u': u'it\'s', 'neg': -4}`, noYAML: true,
		v: map[any]any{pk("t"): cborrpc.Tuple{pb("a"), uint64(1)}, pk("one"): cborrpc.Tuple{uint64(1)}, pk("bytes"): pb("\x00\xff"), pk("u"): "it's", pk("neg"): int64(-4)}},
	{py: `None`, v: nil},
	{py: `'plain'`, v: pb("plain")},
	{py: `{'num_workers': 3, 'num_children': 1, 'num_expirable': 3}`,
		v: map[any]any{pk("num_workers"): uint64(3), pk("num_children"): uint64(1), pk("num_expirable"): uint64(3)}},
}

const pyvalueScript = `
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

// TestPyvalueMatchesPython2 compares every pyvalue formatter with Python 2.7 and PyYAML
// 5.4 from the coordinate virtualenv on the same values.
func TestPyvalueMatchesPython2(t *testing.T) {
	venv := testdaemon.PyVenv(t)
	args := []string{"-c", pyvalueScript}
	for _, c := range pyvalueCases {
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
	for i, c := range pyvalueCases {
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
