package migrate

import (
	"context"
	"fmt"

	"github.com/coordinated/coordinated/client"
)

// Difference is one count that differs between source and target.
type Difference struct {
	Spec   string
	Status string // "queued" (available+pending), "finished", "failed", or "spec"
	Source int64
	Target int64
}

func (d Difference) String() string {
	if d.Status == "spec" {
		return fmt.Sprintf("work spec %q: missing on the target", d.Spec)
	}
	return fmt.Sprintf("work spec %q: %s units: source %d, target %d", d.Spec, d.Status, d.Source, d.Target)
}

// Verify compares unit counts per spec and status on both sides (specs:
// empty means every spec on the source). Units pending on either side
// count as queued, since a pending unit is copied as available.
func Verify(ctx context.Context, src, dst *client.Client, specs []string) ([]Difference, error) {
	if len(specs) == 0 {
		var err error
		if specs, err = src.WorkSpecNames(ctx); err != nil {
			return nil, fmt.Errorf("listing work specs on %s: %w", src.Address(), err)
		}
	}
	var diffs []Difference
	for _, name := range specs {
		sc, err := src.CountWorkUnits(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("work spec %q: counting on the source: %w", name, err)
		}
		def, err := dst.GetWorkSpec(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("work spec %q: reading the target: %w", name, err)
		}
		if def == nil {
			diffs = append(diffs, Difference{Spec: name, Status: "spec"})
			continue
		}
		dc, err := dst.CountWorkUnits(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("work spec %q: counting on the target: %w", name, err)
		}
		groups := []struct {
			label    string
			statuses []int
		}{
			{"queued", []int{client.Available, client.Pending, client.Blocked}},
			{"finished", []int{client.Finished}},
			{"failed", []int{client.Failed}},
		}
		for _, g := range groups {
			var s, d int64
			for _, st := range g.statuses {
				s += sc[st]
				d += dc[st]
			}
			if s != d {
				diffs = append(diffs, Difference{Spec: name, Status: g.label, Source: s, Target: d})
			}
		}
	}
	return diffs, nil
}
