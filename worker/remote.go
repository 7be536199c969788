package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/coordinate"
)

// Remote is a Queue over a coordinate daemon, through the legacy protocol
// with the Go-worker options of docs/compat.md ("Go workers"): get_work
// asks for the worker's runtime and tasks and for lease tokens, and
// updates carry the token, so a late update after the lease was given to
// another worker fails with coordinate.ErrLostLease. A daemon that does
// not know the options ignores them: attempts then have no token and
// updates are not fenced.
//
// get_work runs on a connection of its own so a long get_work never holds
// up heartbeats and updates.
type Remote struct {
	work  *client.Client // get_work only
	other *client.Client // everything else
	clock coordinate.Clock
}

// NewRemote returns a Remote for the daemon cfg names. It connects on the
// first call.
func NewRemote(cfg client.Config) (*Remote, error) {
	work, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	other, err := client.New(cfg)
	if err != nil {
		work.Close()
		return nil, err
	}
	return &Remote{work: work, other: other, clock: coordinate.SystemClock{}}, nil
}

// Close closes the connections.
func (r *Remote) Close() error {
	return errors.Join(r.work.Close(), r.other.Close())
}

// GetWork is get_work with the Go-worker options; an attempt's Expires is
// the local time before the call plus the lease asked for.
func (r *Remote) GetWork(ctx context.Context, req coordinate.WorkRequest) ([]coordinate.Attempt, error) {
	return r.GetWorkWait(ctx, req, 0)
}

// GetWorkWait is GetWork that, when there is no work, waits up to wait for
// some to arrive (get_work `wait`; a daemon that does not know it answers
// at once).
func (r *Remote) GetWorkWait(ctx context.Context, req coordinate.WorkRequest, wait time.Duration) ([]coordinate.Attempt, error) {
	lease := req.LeaseTime
	if lease <= 0 {
		lease = coordinate.DefaultLease
	}
	opts := client.Map{
		"lease_time":  lease.Seconds(),
		"max_jobs":    max(req.MaxJobs, 1),
		"lease_token": true,
	}
	if len(req.Runtimes) > 0 {
		opts["runtime"] = req.Runtimes[0]
	}
	if req.Tasks != nil {
		tasks := make([]any, len(req.Tasks))
		for i, t := range req.Tasks {
			tasks[i] = t
		}
		opts["tasks"] = tasks
	}
	if len(req.WorkSpecs) > 0 {
		names := make([]any, len(req.WorkSpecs))
		for i, n := range req.WorkSpecs {
			names[i] = []byte(n)
		}
		opts["work_spec_names"] = names
	}
	if req.AvailableGB > 0 {
		opts["available_gb"] = req.AvailableGB
	}
	if wait > 0 {
		opts["wait"] = wait.Seconds()
	}
	// The lease runs from when the daemon handed the unit out: after
	// start, and, on a long poll, up to wait after it. Without a wait the
	// start is the safe (early) bound; with one, the reply's arrival is
	// (the lease began at most its one-way trip before), or a short lease
	// would look over before the task began.
	granted := r.clock.Now()
	res, err := r.work.Call(ctx, "get_work", []byte(req.Worker.Bytes), opts)
	if err != nil {
		return nil, err
	}
	if wait > 0 {
		granted = r.clock.Now()
	}
	value, err := replyValue("get_work", res)
	if err != nil {
		return nil, err
	}
	var ok bool
	items := []any{value} // max_jobs 1: one tuple
	if max(req.MaxJobs, 1) > 1 {
		if items, ok = client.List(value); !ok {
			return nil, fmt.Errorf("get_work: expected a list of units, got %v", value)
		}
	}
	out := make([]coordinate.Attempt, 0, len(items))
	for _, it := range items {
		a, ok, err := attemptOf(it, req.Worker, granted.Add(lease))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// attemptOf reads one (spec, key, data[, token]) tuple; ok is false for
// the (None, None, None) of no work.
func attemptOf(v any, worker coordinate.Name, expires time.Time) (coordinate.Attempt, bool, error) {
	t, ok := client.List(v)
	if !ok || len(t) < 3 || len(t) > 4 {
		return coordinate.Attempt{}, false, fmt.Errorf("get_work: expected (spec, key, data[, token]), got %v", v)
	}
	if t[0] == nil {
		return coordinate.Attempt{}, false, nil
	}
	spec, ok1 := nameOf(t[0])
	key, ok2 := nameOf(t[1])
	if !ok1 || !ok2 {
		return coordinate.Attempt{}, false, fmt.Errorf("get_work: spec and key must be strings, got %v", v)
	}
	data, err := cborrpc.EncMode().Marshal(t[2])
	if err != nil {
		return coordinate.Attempt{}, false, fmt.Errorf("get_work: unit %q/%q: re-encoding data: %w", spec.Bytes, key.Bytes, err)
	}
	a := coordinate.Attempt{Spec: spec, Key: key, Data: data, Worker: worker, Expires: expires}
	if len(t) == 4 {
		id, ok := client.Int(t[3])
		if !ok || id <= 0 {
			return coordinate.Attempt{}, false, fmt.Errorf("get_work: unit %q/%q: bad lease token %v", spec.Bytes, key.Bytes, t[3])
		}
		a.ID = id
	}
	return a, true, nil
}

func nameOf(v any) (coordinate.Name, bool) {
	switch x := v.(type) {
	case string:
		return coordinate.Name{Bytes: x, Text: true}, true
	case []byte:
		return coordinate.Name{Bytes: string(x)}, true
	}
	return coordinate.Name{}, false
}

// replyValue unpacks the (value, message) pair of a reply.
func replyValue(method string, res any) (any, error) {
	l, ok := client.List(res)
	if !ok || len(l) != 2 {
		return nil, fmt.Errorf("%s: expected a (value, message) pair, got %v", method, res)
	}
	return l[0], nil
}

// UpdateAttempt is update_work_unit, fenced by the lease token when the
// attempt has one.
func (r *Remote) UpdateAttempt(ctx context.Context, ref coordinate.AttemptRef, upd coordinate.WorkUnitUpdate) error {
	opts := client.Map{}
	if upd.Status != 0 {
		opts["status"] = int(upd.Status)
	}
	if upd.LeaseTime != nil {
		opts["lease_time"] = math.Round(upd.LeaseTime.Seconds()*1000) / 1000
	}
	if upd.Data != nil {
		opts["data"] = cbor.RawMessage(upd.Data)
	}
	if upd.Worker != nil {
		opts["worker_id"] = []byte(upd.Worker.Bytes)
	}
	if ref.ID != 0 {
		opts["lease_token"] = ref.ID
	}
	res, err := r.other.Call(ctx, "update_work_unit", []byte(ref.Spec), []byte(ref.Key), opts)
	if errors.Is(err, client.ErrOutcomeUnknown) && upd.Status.Completed() {
		// The reply was lost (the client does not send the update again):
		// the unit's status says whether it was applied. A unit still
		// PENDING did not get it, and the update, fenced by its lease, may
		// go again; finished or failed as asked, it did.
		switch st, serr := r.unitStatus(ctx, ref); {
		case serr != nil:
		case st == upd.Status:
			return nil
		case st == coordinate.StatusPending:
			res, err = r.other.Call(ctx, "update_work_unit", []byte(ref.Spec), []byte(ref.Key), opts)
		}
	}
	if err != nil {
		return err
	}
	l, ok := client.List(res)
	if !ok || len(l) != 2 {
		return fmt.Errorf("update_work_unit %q/%q: unexpected reply %v", ref.Spec, ref.Key, res)
	}
	if done, _ := l[0].(bool); done {
		return nil
	}
	msg, _ := client.Text(l[1])
	if strings.HasPrefix(msg, coordinate.ErrLostLease.Error()) {
		return fmt.Errorf("%w: %s", coordinate.ErrLostLease, msg)
	}
	return fmt.Errorf("update_work_unit %q/%q: %s", ref.Spec, ref.Key, msg)
}

// unitStatus reads one unit's status.
func (r *Remote) unitStatus(ctx context.Context, ref coordinate.AttemptRef) (coordinate.Status, error) {
	st, err := r.other.GetWorkUnitStatus(ctx, ref.Spec, []any{[]byte(ref.Key)})
	if err != nil {
		return 0, err
	}
	if len(st) != 1 || st[0] == nil {
		return 0, fmt.Errorf("work unit %q/%q: no status", ref.Spec, ref.Key)
	}
	return coordinate.Status(st[0].Status), nil
}

// WorkSpec reads a spec's definition and derives its settings.
func (r *Remote) WorkSpec(ctx context.Context, name string) (*coordinate.WorkSpec, error) {
	def, err := r.other.GetWorkSpec(ctx, name)
	if err != nil {
		return nil, err
	}
	if def == nil {
		return nil, fmt.Errorf("%w %q", coordinate.ErrNoSuchWorkSpec, name)
	}
	raw, err := cborrpc.EncMode().Marshal(def)
	if err != nil {
		return nil, fmt.Errorf("work spec %q: re-encoding: %w", name, err)
	}
	n, meta, err := coordinate.ParseWorkSpec(raw)
	if err != nil {
		return nil, err
	}
	return &coordinate.WorkSpec{Name: n, Definition: raw, Meta: meta}, nil
}

// WorkerHeartbeat is worker_heartbeat.
func (r *Remote) WorkerHeartbeat(ctx context.Context, hb coordinate.Heartbeat) error {
	var parent *string
	if hb.Parent != nil {
		parent = &hb.Parent.Bytes
	}
	return r.other.WorkerHeartbeat(ctx, hb.Worker.Bytes, cbor.RawMessage(hb.Mode),
		int(math.Ceil(hb.Expire.Seconds())), cbor.RawMessage(hb.Data), parent)
}

// UnregisterWorker is worker_unregister.
func (r *Remote) UnregisterWorker(ctx context.Context, id string) error {
	return r.other.WorkerUnregister(ctx, id)
}
