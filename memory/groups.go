package memory

import (
	"context"
	"sort"

	"github.com/coordinated/coordinated/coordinate"
)

func (ns *namespace) GroupStatus(ctx context.Context, name string) (*coordinate.GroupStatus, error) {
	now, err := ns.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer ns.unlock()
	gr := ns.st.groups[name]
	if gr == nil {
		return &coordinate.GroupStatus{Group: name, Counts: make(map[coordinate.Status]int), Complete: true}, nil
	}
	return ns.groupStatus(name, gr, now), nil
}

// StalledGroups checks every group that has units: O(groups), not O(units).
func (ns *namespace) StalledGroups(ctx context.Context) ([]*coordinate.GroupStatus, error) {
	now, err := ns.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer ns.unlock()
	var out []*coordinate.GroupStatus
	for name, gr := range ns.st.groups {
		if ns.stalled(gr, now) {
			out = append(out, ns.groupStatus(name, gr, now))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, nil
}

// groupStatus renders one group. Called with ns.mu held.
func (ns *namespace) groupStatus(name string, gr *group, now int64) *coordinate.GroupStatus {
	gs := &coordinate.GroupStatus{Group: name, Counts: make(map[coordinate.Status]int)}
	for st := coordinate.StatusAvailable; st <= coordinate.StatusFailed; st++ {
		if gr.counts[st] > 0 {
			gs.Counts[st] = gr.counts[st]
		}
	}
	gs.Complete = gr.counts[coordinate.StatusAvailable]+gr.counts[coordinate.StatusBlocked]+gr.counts[coordinate.StatusPending] == 0
	gs.LastProgress = timeOf(gr.lastProgress)
	gs.Stalled = ns.stalled(gr, now)
	return gs
}

// stalled: the group has runnable units (AVAILABLE and not waiting out
// a delay) and none of its units changed status, nor had its delay end,
// for the stall timeout.
func (ns *namespace) stalled(gr *group, now int64) bool {
	return gr.counts[coordinate.StatusAvailable] > gr.delayed && now-gr.lastProgress >= int64(ns.stallTimeout)
}
