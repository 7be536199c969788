package client

import (
	"context"
	"fmt"
	"math"

	"github.com/coordinated/coordinated/cborrpc"
)

// The work unit methods (docs/spec/PROTOCOL.md §8.9 to §8.15). Unit keys
// are `any`: []byte for a Python 2 str, string for unicode (what `coordinate
// load` sends, from JSON); results give keys back as the server sent them.

// NewUnit is one work unit to add.
type NewUnit struct {
	Key  any // []byte or string
	Data any // normally a map; nil is sent as null
	// Priority, when set, goes in the unit's metadata ({priority: p}).
	Priority *float64
}

// AddWorkUnits adds units to a spec in one request, each as a (key, data)
// tuple (or (key, data, {priority}) when a priority is set), as the
// Python client sends them.
func (c *Client) AddWorkUnits(ctx context.Context, spec string, units []NewUnit) error {
	items := make([]any, len(units))
	for i, u := range units {
		if u.Priority != nil {
			items[i] = cborrpc.Tuple{u.Key, u.Data, Map{"priority": number(*u.Priority)}}
		} else {
			items[i] = cborrpc.Tuple{u.Key, u.Data}
		}
	}
	res, err := c.Call(ctx, "add_work_units", specArg(spec), items)
	if err != nil {
		return err
	}
	return okPair("add_work_units", res)
}

// number sends an integral float as an integer, as Python would have had it.
func number(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return f
}

// CountWorkUnits returns the number of units per status code.
func (c *Client) CountWorkUnits(ctx context.Context, spec string) (map[int]int64, error) {
	res, err := c.Call(ctx, "count_work_units", specArg(spec))
	if err != nil {
		return nil, err
	}
	v, msg, err := pair("count_work_units", res)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[any]any)
	if !ok {
		if msg == "" {
			msg = fmt.Sprintf("unexpected answer %v", v)
		}
		return nil, &InBandError{Method: "count_work_units", Message: msg}
	}
	counts := make(map[int]int64, len(m))
	for k, n := range m {
		code, ok1 := Int(k)
		cnt, ok2 := Int(n)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("count_work_units %s: non-integer count %v: %v", spec, k, n)
		}
		counts[int(code)] = cnt
	}
	return counts, nil
}

// UnitsQuery selects units for GetWorkUnits.
type UnitsQuery struct {
	Keys   []any // if set, exactly these keys (others ignored)
	States []int // one state is sent as an int, several as a tuple
	Start  any   // a key: only keys >= Start
	Limit  int   // 0: not sent (the server's default, 1000)
	// SendLimit sends Limit even when it is 0 or negative (the daemon
	// then answers no unit; the Python daemon one).
	SendLimit bool
}

// KeyData is one (key, data) pair.
type KeyData struct {
	Key  any
	Data any
}

// GetWorkUnits returns units of a spec.
func (c *Client) GetWorkUnits(ctx context.Context, spec string, q UnitsQuery) ([]KeyData, error) {
	opts := Map{}
	if q.Keys != nil {
		opts["work_unit_keys"] = keyList(q.Keys)
	}
	switch len(q.States) {
	case 0:
	case 1:
		opts["state"] = q.States[0]
	default:
		t := make(cborrpc.Tuple, len(q.States))
		for i, s := range q.States {
			t[i] = s
		}
		opts["state"] = t
	}
	if q.Start != nil {
		opts["start"] = q.Start
	}
	if q.Limit > 0 || q.SendLimit {
		opts["limit"] = q.Limit
	}
	res, err := c.Call(ctx, "get_work_units", specArg(spec), opts)
	if err != nil {
		return nil, err
	}
	v, msg, err := pair("get_work_units", res)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, &InBandError{Method: "get_work_units", Message: msg}
	}
	l, ok := List(v)
	if !ok {
		return nil, fmt.Errorf("get_work_units %s: expected a list, got %v", spec, v)
	}
	out := make([]KeyData, len(l))
	for i, e := range l {
		kd, ok := List(e)
		if !ok || len(kd) != 2 {
			return nil, fmt.Errorf("get_work_units %s: expected (key, data), got %v", spec, e)
		}
		out[i] = KeyData{Key: kd[0], Data: kd[1]}
	}
	return out, nil
}

// PrioritizeWorkUnits sets (priority) or adjusts (adjustment) the
// priority of units; with neither it sets priority 1, as the Python
// client does.
func (c *Client) PrioritizeWorkUnits(ctx context.Context, spec string, keys []any, priority, adjustment *float64) error {
	var p, a any
	if priority == nil && adjustment == nil {
		p = 1
	}
	if priority != nil {
		p = number(*priority)
	}
	if adjustment != nil {
		a = number(*adjustment)
	}
	res, err := c.Call(ctx, "prioritize_work_units", specArg(spec),
		Map{"work_unit_keys": keyList(keys), "priority": p, "adjustment": a})
	if err != nil {
		return err
	}
	return okPair("prioritize_work_units", res)
}

// DelQuery selects units for DelWorkUnits.
type DelQuery struct {
	All   bool
	Keys  []any
	State int // 0: any
}

// DelWorkUnits deletes units and returns how many were deleted.
func (c *Client) DelWorkUnits(ctx context.Context, spec string, q DelQuery) (int64, error) {
	opts := Map{}
	if q.Keys != nil {
		opts["work_unit_keys"] = keyList(q.Keys)
	}
	if q.State != 0 {
		opts["state"] = q.State
	}
	if q.All {
		opts["all"] = true
	}
	res, err := c.Call(ctx, "del_work_units", specArg(spec), opts)
	if err != nil {
		return 0, err
	}
	v, msg, err := pair("del_work_units", res)
	if err != nil {
		return 0, err
	}
	n, ok := Int(v)
	if !ok {
		return 0, fmt.Errorf("del_work_units %s: expected a count, got %v", spec, v)
	}
	if n == 0 && msg != "" {
		return 0, &InBandError{Method: "del_work_units", Message: msg}
	}
	return n, nil
}

// UnitStatus is one element of get_work_unit_status's answer.
type UnitStatus struct {
	Status int
	// Expiration is the lease expiry (pending) or completion time, when
	// the server sent the key (HasExpiration); it may be nil.
	Expiration    any
	HasExpiration bool
	WorkerID      any // nil when absent
	HasWorker     bool
	Traceback     any
	HasTraceback  bool
	Raw           map[any]any
}

// GetWorkUnitStatus returns the status of each key, nil for an unknown key.
func (c *Client) GetWorkUnitStatus(ctx context.Context, spec string, keys []any) ([]*UnitStatus, error) {
	res, err := c.Call(ctx, "get_work_unit_status", specArg(spec), keyList(keys))
	if err != nil {
		return nil, err
	}
	v, msg, err := pair("get_work_unit_status", res)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, &InBandError{Method: "get_work_unit_status", Message: msg}
	}
	l, ok := List(v)
	if !ok || len(l) != len(keys) {
		return nil, fmt.Errorf("get_work_unit_status %s: expected %d statuses, got %v", spec, len(keys), v)
	}
	out := make([]*UnitStatus, len(l))
	for i, e := range l {
		if e == nil {
			continue
		}
		m, ok := e.(map[any]any)
		if !ok {
			return nil, fmt.Errorf("get_work_unit_status %s: expected a map, got %v", spec, e)
		}
		st := &UnitStatus{Raw: m}
		s, _ := Get(m, "status")
		code, _ := Int(s)
		st.Status = int(code)
		st.Expiration, st.HasExpiration = Get(m, "expiration")
		st.WorkerID, st.HasWorker = Get(m, "worker_id")
		st.Traceback, st.HasTraceback = Get(m, "traceback")
		out[i] = st
	}
	return out, nil
}

// UnitUpdate is update_work_unit's options; unset fields are not sent.
type UnitUpdate struct {
	LeaseTime *float64 // seconds from now
	Status    int      // 0: unchanged
	Data      any
	SetData   bool // send Data (even nil)
}

// UpdateWorkUnit renews, finishes, fails or retries a unit.
func (c *Client) UpdateWorkUnit(ctx context.Context, spec string, key any, u UnitUpdate) error {
	opts := Map{}
	if u.LeaseTime != nil {
		opts["lease_time"] = number(*u.LeaseTime)
	}
	if u.Status != 0 {
		opts["status"] = u.Status
	}
	if u.SetData {
		opts["data"] = u.Data
	}
	res, err := c.Call(ctx, "update_work_unit", specArg(spec), key, opts)
	if err != nil {
		return err
	}
	return okPair("update_work_unit", res)
}

// Retry makes units available again ({lease_time: 0, status: 1} each, as
// TaskMaster.retry sends).
func (c *Client) Retry(ctx context.Context, spec string, keys ...any) error {
	zero := 0.0
	for _, k := range keys {
		if err := c.UpdateWorkUnit(ctx, spec, k, UnitUpdate{LeaseTime: &zero, Status: Available}); err != nil {
			return err
		}
	}
	return nil
}
