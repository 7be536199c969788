package client

import (
	"context"
	"fmt"
	"time"
)

// Leasing work (docs/spec/PROTOCOL.md §8.16, §8.17).

// WorkRequest is get_work's options.
type WorkRequest struct {
	// LeaseTime is the lease asked for; 0 means Config.DefaultLifetime
	// (TaskMaster always sends one).
	LeaseTime     time.Duration
	AvailableGB   *float64
	WorkSpecNames []string
	// MaxJobs is the most units wanted; 0 means 1. With 1 the server
	// answers a single triple, otherwise a list.
	MaxJobs int
}

// Work is one leased unit.
type Work struct {
	Spec any // the spec's name as the server sent it
	Key  any
	Data any
}

// SpecName is the unit's spec name as a string.
func (w Work) SpecName() string { s, _ := Text(w.Spec); return s }

// GetWork leases up to MaxJobs units to worker; none is an empty slice.
func (c *Client) GetWork(ctx context.Context, worker string, r WorkRequest) ([]Work, error) {
	lease := r.LeaseTime
	if lease == 0 {
		lease = c.cfg.DefaultLifetime
	}
	maxJobs := r.MaxJobs
	if maxJobs == 0 {
		maxJobs = 1
	}
	opts := Map{"lease_time": number(lease.Seconds()), "max_jobs": maxJobs}
	if r.WorkSpecNames != nil {
		opts["work_spec_names"] = nameList(r.WorkSpecNames)
	}
	if r.AvailableGB != nil {
		opts["available_gb"] = *r.AvailableGB
	}
	res, err := c.Call(ctx, "get_work", []byte(worker), opts)
	if err != nil {
		return nil, err
	}
	v, _, err := pair("get_work", res)
	if err != nil {
		return nil, err
	}
	triple := func(t any) (Work, bool, error) {
		l, ok := List(t)
		if !ok || len(l) != 3 {
			return Work{}, false, fmt.Errorf("get_work: expected (spec, key, data), got %v", t)
		}
		if l[0] == nil || l[1] == nil {
			return Work{}, false, nil
		}
		return Work{Spec: l[0], Key: l[1], Data: l[2]}, true, nil
	}
	if maxJobs == 1 {
		w, ok, err := triple(v)
		if err != nil || !ok {
			return nil, err
		}
		return []Work{w}, nil
	}
	l, ok := List(v)
	if !ok {
		return nil, fmt.Errorf("get_work: expected a list of units, got %v", v)
	}
	out := make([]Work, 0, len(l))
	for _, t := range l {
		w, ok, err := triple(t)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, w)
		}
	}
	return out, nil
}

// ChildUnit is one unit a child worker holds (get_child_work_units).
type ChildUnit struct {
	Spec     any
	Key      any
	Data     any
	WorkerID any // current lease holder, maybe nil
	Expires  any // number or nil
}

// GetChildWorkUnits returns, per live child of worker, the units it was
// handed and has not finished.
func (c *Client) GetChildWorkUnits(ctx context.Context, worker string) (map[string][]ChildUnit, error) {
	res, err := c.Call(ctx, "get_child_work_units", []byte(worker))
	if err != nil {
		return nil, err
	}
	v, _, err := pair("get_child_work_units", res)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[any]any)
	if !ok {
		return nil, fmt.Errorf("get_child_work_units: expected a map, got %v", v)
	}
	out := make(map[string][]ChildUnit, len(m))
	for k, units := range m {
		child, _ := Text(k)
		l, _ := List(units)
		cu := make([]ChildUnit, 0, len(l))
		for _, u := range l {
			var x ChildUnit
			x.Spec, _ = Get(u, "work_spec_name")
			x.Key, _ = Get(u, "work_unit_key")
			x.Data, _ = Get(u, "work_unit_data")
			x.WorkerID, _ = Get(u, "worker_id")
			x.Expires, _ = Get(u, "expires")
			cu = append(cu, x)
		}
		out[child] = cu
	}
	return out, nil
}
