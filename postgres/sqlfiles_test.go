package postgres

import (
	"sort"
	"strings"
	"testing"
)

// TestEveryNamedStatementUsed: every statement of sql/*.sql is used
// (looked up by a package-level var, or included as a fragment).
func TestEveryNamedStatementUsed(t *testing.T) {
	namedSQL("worker_cols") // make sure parsing ran
	var unused []string
	usedMu.Lock()
	for name := range named {
		if !usedNames[name] {
			unused = append(unused, name)
		}
	}
	usedMu.Unlock()
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("statements in sql/*.sql that nothing uses: %v", unused)
	}
}

// TestCandidatesReadSpecCols: queries/candidates.sql lists the spec
// columns scanSpecWith reads, as spec_cols does.
func TestCandidatesReadSpecCols(t *testing.T) {
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if cols := norm(namedSQL("spec_cols")); !strings.Contains(norm(candidatesSQL), "SELECT "+cols+",") {
		t.Errorf("queries/candidates.sql does not start with spec_cols (%s)", cols)
	}
}
