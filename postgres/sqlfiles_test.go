package postgres

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestEveryNamedStatementUsed: every statement of sql/*.sql is used,
// looked up by a namedSQL call in the package's code or included as a
// fragment by another statement or a statement of queries/.
func TestEveryNamedStatementUsed(t *testing.T) {
	all, err := parseNamed()
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	files, err := fs.Glob(sqlDir, "sql/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		text, err := sqlDir.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fragmentRef.FindAllStringSubmatch(string(text), -1) {
			used[m[1]] = true
		}
	}
	queries, err := filepath.Glob("queries/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range queries {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fragmentRef.FindAllStringSubmatch(string(text), -1) {
			used[m[1]] = true
		}
	}
	goFiles, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range goFiles {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if fn, ok := call.Fun.(*ast.Ident); !ok || fn.Name != "namedSQL" || len(call.Args) != 1 {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if name, err := strconv.Unquote(lit.Value); err == nil {
					used[name] = true
					return true
				}
			}
			t.Errorf("%s: namedSQL of something other than a string literal: this test cannot tell what it uses", fset.Position(call.Pos()))
			return true
		})
	}
	var unused []string
	for name := range all {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("statements in sql/*.sql that nothing uses: %v", unused)
	}
}

// TestCandidatesReadSpecCols: queries/candidates.sql's record of a
// spec's settings holds the spec columns specColumns reads: spec_cols,
// put in by withFragments.
func TestCandidatesReadSpecCols(t *testing.T) {
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if strings.Contains(candidatesSQL, "{{") {
		t.Errorf("queries/candidates.sql keeps a fragment reference: %s", candidatesSQL)
	}
	if cols := norm(namedSQL("spec_cols")); !strings.Contains(norm(candidatesSQL), "ROW("+cols+")") {
		t.Errorf("queries/candidates.sql's record is not ROW(spec_cols) (%s)", cols)
	}
}
