package postgres

import (
	"sort"
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
