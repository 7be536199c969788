package migrate

import (
	"context"
	"fmt"
	"reflect"

	"github.com/coordinated/coordinated/client"
)

// pageCopier copies one page of units of one spec.
type pageCopier struct {
	src, dst *client.Client
	spec     string
	ranks    map[string]float64
	result   *SpecResult
}

// targetStatus is the status a source unit has on the target: PENDING
// becomes AVAILABLE.
func targetStatus(src int) int {
	if src == client.Pending {
		return client.Available
	}
	return src
}

// copyPage brings the target's copy of the page's units in line with the
// source: one add_work_units for every unit to write, then the status
// changes of those that finished or failed.
func (pc *pageCopier) copyPage(ctx context.Context, page []client.KeyData) error {
	keys := make([]any, len(page))
	for i, u := range page {
		keys[i] = u.Key
	}
	srcStatus, err := pc.src.GetWorkUnitStatus(ctx, pc.spec, keys)
	if err != nil {
		return fmt.Errorf("reading unit statuses on the source: %w", err)
	}
	have, err := pc.dst.GetWorkUnits(ctx, pc.spec, client.UnitsQuery{Keys: keys})
	if err != nil {
		return fmt.Errorf("reading units on the target: %w", err)
	}
	dstStatus, err := pc.dst.GetWorkUnitStatus(ctx, pc.spec, keys)
	if err != nil {
		return fmt.Errorf("reading unit statuses on the target: %w", err)
	}
	if len(have) != len(page) {
		return fmt.Errorf("the target answered %d units for %d keys", len(have), len(page))
	}
	var adds []client.NewUnit
	type finish struct {
		key    any
		status int
		data   any // the full data, put back after finishing without output
	}
	var finishes []finish
	for i, u := range page {
		if srcStatus[i] == nil {
			continue // deleted on the source since the listing
		}
		want := targetStatus(srcStatus[i].Status)
		if want == client.Blocked {
			want = client.Available
		}
		if d := dstStatus[i]; d != nil {
			switch {
			case d.Status == want && reflect.DeepEqual(have[i].Data, u.Data):
				pc.result.Unchanged++
				continue
			case want == client.Available && d.Status != client.Available:
				// Leased, finished or failed on the target since: it has
				// moved on; do not queue it again.
				pc.result.Kept++
				continue
			}
		}
		add := client.NewUnit{Key: u.Key, Data: u.Data}
		if p, ok := pc.ranks[string(keyBytes(u.Key))]; ok {
			add.Priority = &p
		}
		if want == client.Finished {
			add.Data = withoutOutput(u.Data)
		}
		adds = append(adds, add)
		if want == client.Finished || want == client.Failed {
			finishes = append(finishes, finish{key: u.Key, status: want, data: u.Data})
		}
		pc.result.Copied++
	}
	if len(adds) > 0 {
		if err := pc.dst.AddWorkUnits(ctx, pc.spec, adds); err != nil {
			return fmt.Errorf("adding units on the target: %w", err)
		}
	}
	for _, f := range finishes {
		if err := pc.dst.UpdateWorkUnit(ctx, pc.spec, f.key, client.UnitUpdate{Status: f.status}); err != nil {
			return fmt.Errorf("unit %v: setting its status on the target: %w", f.key, err)
		}
		if f.status == client.Finished && !reflect.DeepEqual(withoutOutput(f.data), f.data) {
			// Re-finishing a finished unit does not chain again; this
			// only puts its output back.
			err := pc.dst.UpdateWorkUnit(ctx, pc.spec, f.key, client.UnitUpdate{Status: f.status, Data: f.data, SetData: true})
			if err != nil {
				return fmt.Errorf("unit %v: restoring its output on the target: %w", f.key, err)
			}
		}
	}
	return nil
}

// withoutOutput returns data without its `output` key (a copy), so that
// finishing the copy does not chain into the next spec: the units that
// chaining made on the source are copied on their own.
func withoutOutput(data any) any {
	m, ok := data.(map[any]any)
	if !ok {
		return data
	}
	if _, ok := client.Get(m, "output"); !ok {
		return data
	}
	out := make(map[any]any, len(m))
	for k, v := range m {
		if s, ok := client.Text(k); ok && s == "output" {
			continue
		}
		out[k] = v
	}
	return out
}
