package pyimport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/coordinated/coordinated/coordinate"
)

// ErrSpecsExist is returned by Load when the namespace already holds work
// specs of the names being imported and Replace is false.
var ErrSpecsExist = errors.New("the backend already holds work specs of these names")

// Summary is what Load stored: per spec, units by status (archived counts
// included, as count_work_units reports them).
type Summary struct {
	Specs []SpecSummary
}

// SpecSummary is one imported spec.
type SpecSummary struct {
	Name   string
	Counts map[coordinate.Status]int
}

// Total is the summary's units by status over all specs.
func (s *Summary) Total() map[coordinate.Status]int {
	out := make(map[coordinate.Status]int)
	for _, sp := range s.Specs {
		for st, n := range sp.Counts {
			out[st] += n
		}
	}
	return out
}

var summaryStatuses = []coordinate.Status{
	coordinate.StatusAvailable, coordinate.StatusPending, coordinate.StatusFinished, coordinate.StatusFailed,
}

// WriteTable prints the summary as a table, one row per spec and a total.
func (s *Summary) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "work spec\tavailable\tpending\tfinished\tfailed\t")
	row := func(name string, c map[coordinate.Status]int) {
		fmt.Fprintf(tw, "%s\t", name)
		for _, st := range summaryStatuses {
			fmt.Fprintf(tw, "%d\t", c[st])
		}
		fmt.Fprintln(tw)
	}
	for _, sp := range s.Specs {
		row(sp.Name, sp.Counts)
	}
	row(fmt.Sprintf("total (%d specs)", len(s.Specs)), s.Total())
	return tw.Flush()
}

// Load stores every spec of st in ns with Namespace.ImportWorkSpec. If ns
// already holds specs of those names, Load fails with ErrSpecsExist
// naming them, unless replace, which replaces them. Bad input changes
// nothing: every spec is checked before anything is deleted or stored
// (coordinate.ResolveImport, and coordinate.ImportChecker when ns is
// one: the memory backend's limit on the size of a spec).
//
// A namespace that imports atomically (coordinate.BulkImporter, the
// PostgreSQL backend) deletes the specs it replaces and stores the new
// ones in one change, so a failure of any kind, or a process that dies
// part way, leaves the old specs as they were. Otherwise (the memory
// backend) Load deletes the specs it replaces and then stores the new
// ones spec by spec; if storing fails part-way, the specs already stored
// are deleted again (best effort) before the error is returned. Only
// failures that do not come from the input get there (a journal that
// cannot be written, a cancelled ctx): then the specs being replaced are
// gone already, and the error says so.
func Load(ctx context.Context, ns coordinate.Namespace, st *State, replace bool) (*Summary, error) {
	names := st.SpecNames()
	imports := make([]*coordinate.ImportedWorkSpec, len(names))
	check := func(in *coordinate.ImportedWorkSpec) error {
		_, _, err := coordinate.ResolveImport(in)
		return err
	}
	if c, ok := ns.(coordinate.ImportChecker); ok {
		check = c.CheckImport // ResolveImport's checks and the namespace's
	}
	for i, n := range names {
		imports[i] = st.Specs[n].Imported()
		if err := check(imports[i]); err != nil {
			return nil, fmt.Errorf("work spec %q: %w", n, err)
		}
	}
	var existing []string
	for _, n := range names {
		_, err := ns.WorkSpec(ctx, n)
		switch {
		case err == nil:
			existing = append(existing, n)
		case !errors.Is(err, coordinate.ErrNoSuchWorkSpec):
			return nil, fmt.Errorf("checking work spec %q: %w", n, err)
		}
	}
	if len(existing) > 0 && !replace {
		return nil, fmt.Errorf("%w: %s", ErrSpecsExist, quoteList(existing))
	}
	sum := &Summary{}
	for _, n := range names {
		sum.Specs = append(sum.Specs, SpecSummary{Name: n, Counts: st.Specs[n].Counts()})
	}
	sort.Slice(sum.Specs, func(i, j int) bool { return sum.Specs[i].Name < sum.Specs[j].Name })
	if bi, ok := ns.(coordinate.BulkImporter); ok {
		// All or nothing, the replaced specs' deletion included, even if
		// this process dies part way.
		if err := bi.ImportWorkSpecs(ctx, imports, replace); err != nil {
			return nil, fmt.Errorf("importing %d work specs: %w", len(imports), err)
		}
		return sum, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, n := range existing {
		if err := ns.DeleteWorkSpec(ctx, n); err != nil && !errors.Is(err, coordinate.ErrNoSuchWorkSpec) {
			return nil, fmt.Errorf("replacing work spec %q: %w", n, err)
		}
	}
	for i, n := range names {
		if err := ns.ImportWorkSpec(ctx, imports[i]); err != nil {
			err = fmt.Errorf("importing work spec %q: %w", n, err)
			for _, done := range names[:i] {
				if derr := ns.DeleteWorkSpec(context.WithoutCancel(ctx), done); derr != nil {
					err = fmt.Errorf("%w; and undoing the import of %q failed: %v", err, done, derr)
				}
			}
			if len(existing) > 0 {
				err = fmt.Errorf("%w; the work specs it was to replace were deleted before: %s", err, quoteList(existing))
			}
			return nil, err
		}
	}
	return sum, nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
