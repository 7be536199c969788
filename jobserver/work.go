package jobserver

import (
	"context"
	"errors"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/cborx"
)

// getWork: get_work(worker_id, options) -> work (§8.16). With max_jobs
// exactly 1 (the default) the work is one (spec, key, data) tuple, or
// (null, null, null) when there is none; any other max_jobs gets a list of
// such tuples, possibly empty. The client relies on that shape.
func (js *JobServer) getWork(ctx context.Context, p []cbor.RawMessage) (any, error) {
	worker, err := decodeName(p[0], "worker_id")
	if err != nil {
		return nil, err
	}
	// Python read options.get(...) and passed max_jobs and lease_time
	// through int() and float(): a null for any of them raised before
	// anything was leased, so it is a TypeError here too (elsewhere null
	// options read as {}). A given max_jobs or lease_time is decoded even
	// when null, which the decoders refuse.
	if len(p[1]) > 0 && cborx.IsNull(p[1]) {
		return nil, typeError("options must be a dict, not None")
	}
	opts := make(options, 8) // stays on the stack
	if err := decodeOptionsInto(p[1], "options", opts); err != nil {
		return nil, err
	}
	req := coordinate.WorkRequest{Worker: worker, MaxJobs: 1}
	leaseSeconds := 0.0 // invalid: the clamp turns it into the default
	if raw, ok := opts["lease_time"]; ok {
		if leaseSeconds, err = decodeNumber(raw, "lease_time"); err != nil {
			return nil, err
		}
	}
	req.LeaseTime = coordinate.ClampGetWorkLease(leaseSeconds)
	if raw, ok := opts["max_jobs"]; ok {
		n, err := decodePyInt(raw, "max_jobs")
		if err != nil {
			return nil, err
		}
		req.MaxJobs = int(max(-1, min(n, maxUnitLimit)))
	}
	// The reply byte budget bounds what is leased, not only what is sent:
	// units past it stay AVAILABLE for other workers (docs/limits.md).
	req.MaxBytes = js.limits.MaxReplyBytes
	single := req.MaxJobs == 1 // the reply's shape; the backend floors MaxJobs (coordinate.WorkCount)
	if opts.present("work_spec_names") {
		names, err := decodeNames(opts["work_spec_names"], "work_spec_names")
		if err != nil {
			return nil, err
		}
		req.WorkSpecs = nameBytes(names)
	}
	if opts.present("available_gb") {
		if req.AvailableGB, err = decodeNumber(opts["available_gb"], "available_gb"); err != nil {
			return nil, err
		}
	}
	tokens, wait, err := goWorkerRequest(opts, &req)
	if err != nil {
		return nil, err
	}
	var attempts []coordinate.Attempt
	if wait > 0 {
		attempts, err = js.getWorkWaiting(ctx, req, wait)
	} else {
		attempts, err = js.ns.GetWork(ctx, req)
	}
	if err != nil {
		return nil, js.backendError("get_work", err)
	}
	if len(attempts) > 0 {
		cborrpc.OnUndelivered(ctx, func() { js.releaseUndelivered(ctx, attempts) })
	}
	return workResult(attempts, single, tokens), nil
}

// releaseTimeout bounds taking back the leases of an undelivered reply.
const releaseTimeout = 30 * time.Second

// releaseUndelivered makes the units of a get_work reply that never
// reached its worker available again at once, instead of when their
// leases run out. A lease that changed meanwhile is left alone.
func (js *JobServer) releaseUndelivered(ctx context.Context, attempts []coordinate.Attempt) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	for _, a := range attempts {
		err := js.ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: a.Spec.Bytes, Key: a.Key.Bytes, ID: a.ID},
			coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
		if err != nil && !errors.Is(err, coordinate.ErrLostLease) {
			js.log.Warn("get_work reply not delivered; the unit stays leased until its lease ends",
				"work_spec", a.Spec.Bytes, "work_unit", a.Key.Bytes, "worker", a.Worker.Bytes, "err", err)
			continue
		}
		js.log.Info("get_work reply not delivered; lease released",
			"work_spec", a.Spec.Bytes, "work_unit", a.Key.Bytes, "worker", a.Worker.Bytes)
	}
}

// getChildWorkUnits: get_child_work_units(worker_id) -> ({child_id:
// [unit map...]}, null) (§8.17). Units stay listed after their lease
// ended. A unit nobody holds any more whose lease by the child lapsed, or
// was given back with a lease time not in the future (how the Python
// worker gives units back), is reported with the child as its worker_id
// and that lease's end as expires, as the Python daemon did until its
// lazy sweep ran: the Python fork worker keeps only the units whose
// worker_id is the child, and fails those ("job expired") when it stops
// an overdue child. One given back with status AVAILABLE (an operator's
// retry) has a null worker_id and expires, as in Python, so the fork
// worker leaves it alone.
func (js *JobServer) getChildWorkUnits(ctx context.Context, p []cbor.RawMessage) (any, error) {
	parent, err := decodeName(p[0], "worker_id")
	if err != nil {
		return nil, err
	}
	children, err := js.ns.ChildWorkUnits(ctx, parent.Bytes)
	if errors.Is(err, coordinate.ErrNoSuchWorker) {
		return pair(map[any]any{}, nil), nil
	} else if err != nil {
		return nil, js.backendError("get_child_work_units", err)
	}
	out := make(map[any]any, len(children))
	for _, c := range children {
		units := make([]any, len(c.Units))
		for i, u := range c.Units {
			units[i] = map[cbor.ByteString]any{
				"work_spec_name": nameValue(u.Spec),
				"work_unit_key":  nameValue(u.Key),
				"work_unit_data": rawData(u.Data),
				"worker_id":      childUnitWorker(c.Worker, u),
				"expires":        seconds(u.Expires),
			}
		}
		out[nameKey(c.Worker)] = units
	}
	return pair(out, nil), nil
}

// childUnitWorker is the worker_id get_child_work_units reports for a unit
// of child: its current holder; else the child, when the child's lease on
// it ended with a time (it lapsed, or a lease time gave the unit back);
// else null (given back with status AVAILABLE).
func childUnitWorker(child coordinate.Name, u coordinate.ChildWorkUnit) any {
	switch {
	case u.Worker != nil:
		return nameValue(*u.Worker)
	case !u.Expires.IsZero():
		return nameValue(child)
	}
	return nil
}
