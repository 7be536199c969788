package postgres

import (
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"strings"
	"sync"
)

// The cold-path statements live in sql/*.sql, one topic per file, each
// under a line "-- name: NAME" (the comment lines before it describe it).
// A statement may include a fragment, another named block, as {{NAME}}
// (column lists shared by several statements). The hot statements are in
// queries/, one per file, embedded where they are used; they may include
// fragments too (withFragments). Statements are
// looked up by name once, when the package starts (package-level vars),
// so a missing name stops every test at once; TestEveryNamedStatementUsed
// finds the unused ones.
//
// Why not sqlc: most cold statements take arrays and optional filters
// (unnest($2::bytea[]), "$3 IS NULL OR ...") that it cannot type without
// reshaping them, and the hot batch is assembled by hand anyway; named
// blocks keep every statement in a .sql file without a generator.

//go:embed sql/*.sql
var sqlDir embed.FS

var (
	namedOnce sync.Once
	named     map[string]string
	namedErr  error
)

var (
	nameLine     = regexp.MustCompile(`(?m)^-- name: ([a-z0-9_]+)[ \t]*$`)
	fragmentRef  = regexp.MustCompile(`\{\{([a-z0-9_]+)\}\}`)
	commentLines = regexp.MustCompile(`(?m)^--.*\n`)
)

// parseNamed reads every named block of sql/*.sql.
func parseNamed() (map[string]string, error) {
	out := map[string]string{}
	files, err := fs.Glob(sqlDir, "sql/*.sql")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		text, err := sqlDir.ReadFile(f)
		if err != nil {
			return nil, err
		}
		s := string(text)
		idx := nameLine.FindAllStringSubmatchIndex(s, -1)
		for i, m := range idx {
			end := len(s)
			if i+1 < len(idx) {
				end = idx[i+1][0]
			}
			name := s[m[2]:m[3]]
			if _, dup := out[name]; dup {
				return nil, fmt.Errorf("%s: statement %q named twice", f, name)
			}
			body := strings.TrimSpace(commentLines.ReplaceAllString(s[m[1]:end], ""))
			if body == "" {
				return nil, fmt.Errorf("%s: statement %q is empty", f, name)
			}
			out[name] = body
		}
	}
	// Fragments are substituted from the blocks as written, one level
	// deep: a fragment that includes another is refused, so the result
	// never depends on the order the map is walked in.
	raw := maps.Clone(out)
	for name, body := range raw {
		var missing, nested []string
		out[name] = fragmentRef.ReplaceAllStringFunc(body, func(ref string) string {
			frag := ref[2 : len(ref)-2]
			f, ok := raw[frag]
			switch {
			case !ok:
				missing = append(missing, frag)
				return ref
			case fragmentRef.MatchString(f):
				nested = append(nested, frag)
			}
			return f
		})
		if len(missing) > 0 {
			return nil, fmt.Errorf("statement %q includes missing fragments %v", name, missing)
		}
		if len(nested) > 0 {
			return nil, fmt.Errorf("statement %q includes fragments %v that include fragments themselves", name, nested)
		}
	}
	return out, nil
}

// withFragments is text, a statement of queries/, with each {{NAME}}
// replaced by the fragment of sql/*.sql called so (panicking when there
// is none, a programming error caught at start), so a column list shared
// with the named statements is written once.
func withFragments(text string) string {
	return fragmentRef.ReplaceAllStringFunc(text, func(ref string) string {
		return namedBlock(ref[2 : len(ref)-2])
	})
}

// namedSQL returns the statement called name in sql/*.sql, panicking when
// there is none (a programming error caught at start).
func namedSQL(name string) string { return namedBlock(name) }

// namedBlock is namedSQL for any name (TestEveryNamedStatementUsed finds
// the uses of namedSQL by their literal names).
func namedBlock(name string) string {
	namedOnce.Do(func() { named, namedErr = parseNamed() })
	if namedErr != nil {
		panic("postgres: sql/*.sql: " + namedErr.Error())
	}
	s, ok := named[name]
	if !ok {
		panic("postgres: no statement named " + name + " in sql/*.sql")
	}
	return s
}
