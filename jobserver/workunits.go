package jobserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/cborx"
	"github.com/coordinated/coordinated/internal/replyhold"
)

// get_work_units listing limits (PROTOCOL §8.11).
const (
	defaultUnitLimit = 1000
	maxUnitLimit     = 10000
)

// noSuchWorkUnit is update_work_unit's in-band message for an unknown key.
func noSuchWorkUnit(key coordinate.Name) []byte {
	return message("no such work unit key=" + pyReprName(key))
}

// addWorkUnits: add_work_units(name, [(key, data[, meta[, priority]])...])
// -> (ok, msg) (§8.9). Every item is validated before anything is added.
func (js *JobServer) addWorkUnits(ctx context.Context, p []cbor.RawMessage) (any, error) {
	name, err := decodeName(p[0], "work_spec_name")
	if err != nil {
		return nil, err
	}
	items, err := decodeList(p[1], "work_unit_key_vals")
	if err != nil {
		return nil, err
	}
	units := make([]coordinate.WorkUnitInput, len(items))
	// The keys are gathered into one buffer and become substrings of one
	// string: one allocation for the batch instead of one per unit.
	var keyBytes []byte
	keyEnds := make([]int, len(items))
	var elems []cbor.RawMessage // one item's elements, reused
	for i, raw := range items {
		if elems, keyBytes, err = decodeUnitItem(raw, i, &units[i], elems[:0], keyBytes); err != nil {
			return nil, err
		}
		if err := js.limits.checkUnitData(units[i].Data, func() string { return "work unit " + strconv.Itoa(i) }); err != nil {
			return nil, err
		}
		keyEnds[i] = len(keyBytes)
	}
	allKeys, start := string(keyBytes), 0
	for i := range units {
		units[i].Key.Bytes = allKeys[start:keyEnds[i]]
		start = keyEnds[i]
	}
	err = js.ns.AddWorkUnits(ctx, name.Bytes, units)
	switch {
	case err == nil:
		return okPair(), nil
	case errors.Is(err, coordinate.ErrNoSuchWorkSpec):
		return pair(false, noSuchWorkSpec(name)), nil
	case errors.Is(err, coordinate.ErrInvalidWorkUnit), errors.Is(err, coordinate.ErrCycle):
		return nil, valueError("%v", err)
	}
	return nil, js.backendError("add_work_units", err)
}

// decodeUnitItem decodes one add_work_units item: a list or tuple of key,
// data, optional meta map and optional priority overriding meta's. elems
// is scratch space for the item's elements, returned for reuse. The key's
// bytes are appended to keys rather than stored in in.Key.Bytes.
func decodeUnitItem(raw cbor.RawMessage, i int, in *coordinate.WorkUnitInput, elems []cbor.RawMessage, keys []byte) ([]cbor.RawMessage, []byte, error) {
	what := func() string { return "work unit " + strconv.Itoa(i) }
	elems, ok := cborx.List(elems, raw)
	if !ok {
		var err error
		if elems, err = decodeList(raw, "work unit"); err != nil {
			return elems, keys, &pyError{kind: "AssertionError", detail: what() + " must be a list or tuple"}
		}
	}
	if len(elems) < 2 || len(elems) > 4 {
		return elems, keys, &pyError{kind: "AssertionError", detail: fmt.Sprintf("%s must have 2 to 4 elements, not %d", what(), len(elems))}
	}
	if key, text, ok := cborx.String(elems[0]); ok {
		in.Key.Text = text
		keys = append(keys, key...)
	} else {
		name, err := decodeName(elems[0], "key")
		if err != nil {
			return elems, keys, &pyError{kind: "AssertionError", detail: what() + " key must be a string"}
		}
		in.Key.Text = name.Text
		keys = append(keys, name.Bytes...)
	}
	in.Data = coordinate.Data(elems[1])
	if len(elems) >= 3 {
		if err := coordinate.ParseUnitMeta(coordinate.Data(elems[2]), in); err != nil {
			return elems, keys, valueError("%s: %v", what(), err)
		}
	}
	if len(elems) == 4 && !cborx.IsNull(elems[3]) {
		prio, err := decodeNumber(elems[3], what()+" priority")
		if err != nil {
			return elems, keys, err
		}
		in.Priority = &prio
	}
	return elems, keys, nil
}

// countWorkUnits: count_work_units(name) -> ({status: count}, null) (§8.10).
func (js *JobServer) countWorkUnits(ctx context.Context, p []cbor.RawMessage) (any, error) {
	name, err := decodeName(p[0], "work_spec_name")
	if err != nil {
		return nil, err
	}
	counts, err := js.ns.CountWorkUnits(ctx, name.Bytes)
	if err != nil {
		return js.specCallError("count_work_units", name, false, err)
	}
	return pair(statusCounts(counts), nil), nil
}

// statusCounts renders counts by status as count_work_units does: integer
// status codes as keys, statuses with no units left out.
func statusCounts(counts map[coordinate.Status]int) map[int]int {
	out := make(map[int]int, len(counts))
	for s, n := range counts {
		if n > 0 {
			out[int(s)] = n
		}
	}
	return out
}

// getWorkUnits: get_work_units(name, options) -> ([(key, data)...], null)
// (§8.11). The pairs are tuples: the Python tests compare them with ==.
func (js *JobServer) getWorkUnits(ctx context.Context, p []cbor.RawMessage) (any, error) {
	name, err := decodeName(p[0], "work_spec_name")
	if err != nil {
		return nil, err
	}
	opts, err := decodeOptions(p[1], "options")
	if err != nil {
		return nil, err
	}
	var keys []coordinate.Name
	if opts.present("work_unit_keys") {
		if keys, err = decodeNames(opts["work_unit_keys"], "work_unit_keys"); err != nil {
			return nil, err
		}
	}
	if len(keys) > 0 {
		units, err := js.ns.GetWorkUnits(ctx, name.Bytes, nameBytes(keys))
		if err != nil {
			return js.specCallError("get_work_units", name, nil, err)
		}
		out := make([]any, 0, len(keys))
		budget := replyBudget{max: js.limits.MaxReplyBytes}
		for i, k := range keys {
			if i < len(units) && units[i] != nil {
				if !budget.take(len(units[i].Data), i == 0) {
					break
				}
				out = append(out, cborrpc.Tuple{nameValue(units[i].Key), rawData(units[i].Data)})
			} else {
				out = append(out, cborrpc.Tuple{nameValue(k), nil})
			}
		}
		return pair(out, nil), nil
	}

	var q coordinate.WorkUnitQuery
	if opts.present("state") {
		if q.Statuses, err = decodeStatuses(opts["state"], "state"); err != nil {
			return nil, err
		}
	}
	if opts.present("start") {
		start, err := decodeName(opts["start"], "start")
		if err != nil {
			return nil, err
		}
		q.Start = start.Bytes
	}
	q.Limit = defaultUnitLimit
	if opts.present("limit") {
		l, err := decodePyInt(opts["limit"], "limit")
		if err != nil {
			return nil, err
		}
		q.Limit = int(min(l, maxUnitLimit))
	}
	// Python sliced [:limit], so a limit <= 0 lists nothing; an empty state
	// list matches nothing (the backend would read it as "any state").
	if q.Limit <= 0 || (opts.present("state") && len(q.Statuses) == 0) {
		return js.noUnits(ctx, name)
	}
	q.MaxBytes = js.limits.MaxReplyBytes // the backend stops reading there
	units, err := js.ns.ListWorkUnits(ctx, name.Bytes, q)
	if err != nil {
		return js.specCallError("get_work_units", name, nil, err)
	}
	out := make([]any, 0, len(units))
	budget := replyBudget{max: js.limits.MaxReplyBytes}
	for i, u := range units {
		if !budget.take(len(u.Data), i == 0) {
			break
		}
		out = append(out, cborrpc.Tuple{nameValue(u.Key), rawData(u.Data)})
	}
	return pair(out, nil), nil
}

// noUnits is get_work_units' answer for a query that matches nothing: an
// empty list, or the in-band message for an unknown spec.
func (js *JobServer) noUnits(ctx context.Context, name coordinate.Name) (any, error) {
	_, err := js.ns.WorkSpec(ctx, name.Bytes)
	if err != nil {
		return js.specCallError("get_work_units", name, nil, err)
	}
	return pair([]any{}, nil), nil
}

// prioritizeWorkUnits: prioritize_work_units(name, {work_unit_keys,
// priority, adjustment}) -> (ok, msg) (§8.12).
func (js *JobServer) prioritizeWorkUnits(ctx context.Context, p []cbor.RawMessage) (any, error) {
	name, err := decodeName(p[0], "work_spec_name")
	if err != nil {
		return nil, err
	}
	opts, err := decodeOptions(p[1], "options")
	if err != nil {
		return nil, err
	}
	if !opts.present("work_unit_keys") {
		return pair(false, message("missing work_unit_keys")), nil
	}
	keys, err := decodeNames(opts["work_unit_keys"], "work_unit_keys")
	if err != nil {
		return nil, err
	}
	var priority *float64
	var adjustment float64
	if opts.present("priority") {
		v, err := decodeNumber(opts["priority"], "priority")
		if err != nil {
			return nil, err
		}
		priority = &v
	} else if opts.present("adjustment") {
		if adjustment, err = decodeNumber(opts["adjustment"], "adjustment"); err != nil {
			return nil, err
		}
	}
	// With neither option this changes nothing but still reports an
	// unknown spec. Unknown keys are ignored, as Python did.
	_, err = js.ns.PrioritizeWorkUnits(ctx, name.Bytes, nameBytes(keys), priority, adjustment)
	if err != nil {
		return js.specCallError("prioritize_work_units", name, false, err)
	}
	return okPair(), nil
}

// delWorkUnits: del_work_units(name, options) -> (count, msg) (§8.13).
// Options are evaluated in order: all, work_unit_keys (optionally with
// state), state; with none of them nothing is deleted.
func (js *JobServer) delWorkUnits(ctx context.Context, p []cbor.RawMessage) (any, error) {
	name, err := decodeName(p[0], "work_spec_name")
	if err != nil {
		return nil, err
	}
	opts, err := decodeOptions(p[1], "options")
	if err != nil {
		return nil, err
	}
	var q coordinate.DeleteQuery
	if _, ok := opts["all"]; ok {
		if q.All, err = decodeTruth(opts["all"], "all"); err != nil {
			return nil, err
		}
	}
	usable := q.All
	matchNothing := false
	if !q.All {
		if opts.present("state") {
			if mt := cborx.MajorOf(opts["state"]); mt == 4 || mt == 6 {
				// Python compared each unit's status with the option:
				// a list or tuple (get_work_units takes one) equals no
				// status, so this deletes nothing, and says so with
				// (0, None).
				if _, err := decodeStatuses(opts["state"], "state"); err != nil {
					return nil, err
				}
				matchNothing = true
			} else if q.Statuses, err = decodeStatuses(opts["state"], "state"); err != nil {
				return nil, err
			}
		}
		if opts.present("work_unit_keys") {
			keys, err := decodeNames(opts["work_unit_keys"], "work_unit_keys")
			if err != nil {
				return nil, err
			}
			q.Keys = make([]string, 0, len(keys))
			q.Keys = append(q.Keys, nameBytes(keys)...)
			usable = true
		} else if opts.present("state") {
			usable = true
		}
	}
	if !usable || matchNothing {
		q = coordinate.DeleteQuery{} // deletes nothing; only checks the spec
	}
	n, err := js.ns.DeleteWorkUnits(ctx, name.Bytes, q)
	if err != nil {
		return js.specCallError("del_work_units", name, 0, err)
	}
	if !usable {
		return pair(0, message("no usable options to del_work_units")), nil
	}
	return pair(n, nil), nil
}

// getWorkUnitStatus: get_work_unit_status(name, keys) -> ([status map or
// null...], null) (§8.14).
func (js *JobServer) getWorkUnitStatus(ctx context.Context, p []cbor.RawMessage) (any, error) {
	name, err := decodeName(p[0], "work_spec_name")
	if err != nil {
		return nil, err
	}
	keys, err := decodeNames(p[1], "work_unit_keys")
	if err != nil {
		return nil, err
	}
	units, err := js.ns.GetWorkUnits(ctx, name.Bytes, nameBytes(keys))
	if err != nil {
		return js.specCallError("get_work_unit_status", name, nil, err)
	}
	out := make([]any, len(keys))
	for i := range keys {
		if i < len(units) && units[i] != nil {
			out[i] = unitStatus(units[i])
		}
	}
	return pair(out, nil), nil
}

// unitStatus is one get_work_unit_status entry: status and expiration
// always, worker_id when the unit has a (last) holder, traceback when its
// data map has one, and depends_on for a unit waiting on dependencies
// (DECISIONS 9).
func unitStatus(u *coordinate.WorkUnit) map[cbor.ByteString]any {
	m := map[cbor.ByteString]any{
		"status":     int(u.Status),
		"expiration": seconds(u.Expiration),
	}
	if u.Worker != nil {
		m["worker_id"] = nameValue(*u.Worker)
	}
	if tb := lookupKey(u.Data, "traceback"); tb != nil {
		m["traceback"] = tb
	}
	if len(u.DependsOn) > 0 {
		deps := make([]any, len(u.DependsOn))
		for i, d := range u.DependsOn {
			deps[i] = cborrpc.Tuple{[]byte(d.Spec), []byte(d.Key)}
		}
		m["depends_on"] = deps
	}
	return m
}

// updateWorkUnit: update_work_unit(name, key, {lease_time, status, data,
// worker_id}) -> (ok, msg) (§8.15, SEMANTICS §5.3).
func (js *JobServer) updateWorkUnit(ctx context.Context, p []cbor.RawMessage) (any, error) {
	name, err := decodeName(p[0], "work_spec_name")
	if err != nil {
		return nil, err
	}
	key, err := decodeName(p[1], "work_unit_key")
	if err != nil {
		return nil, err
	}
	opts := make(options, 8) // stays on the stack
	if err := decodeOptionsInto(p[2], "options", opts); err != nil {
		return nil, err
	}
	// The update's rules (nothing to do, valid statuses, the lease clamp)
	// are coordinate's; Check runs here too only so that it answers
	// before the other options are decoded, as the Python daemon did.
	var upd coordinate.WorkUnitUpdate
	if opts.present("lease_time") {
		sec, err := decodeNumber(opts["lease_time"], "lease_time")
		if err != nil {
			return nil, err
		}
		lease := coordinate.RequestedLease(sec)
		upd.LeaseTime = &lease
	}
	if opts.present("status") {
		s, err := decodeInt(opts["status"], "status")
		if err != nil {
			return nil, err
		}
		// As sent: 0 would read as "no status" once in upd (Python
		// stored it and broke the unit).
		if err := coordinate.CheckStatusCode(s); err != nil {
			return js.updateResult(name, key, err)
		}
		upd.Status = coordinate.Status(s)
	}
	if err := upd.Check(); err != nil {
		return js.updateResult(name, key, err)
	}
	// Null data is no new data: Python tested `data is not None`, so a
	// finish with `data: None` kept (and chained from) the unit's data.
	if raw := opts["data"]; opts.present("data") {
		if err := js.limits.checkUnitData(raw, func() string { return "work unit " + pyReprName(key) }); err != nil {
			return nil, err
		}
		upd.Data = coordinate.Data(raw)
	}
	if opts.present("worker_id") {
		w, err := decodeName(opts["worker_id"], "worker_id")
		if err != nil {
			return nil, err
		}
		upd.Worker = &w
	}
	token, err := leaseToken(opts)
	if err != nil {
		return nil, err
	}
	// The reply is built from the update's outcome alone, so it may wait
	// for the update to be durable without this goroutine waiting
	// (internal/replyhold).
	replyhold.Allow(ctx)
	if token != 0 {
		err = js.ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: name.Bytes, Key: key.Bytes, ID: token}, upd)
	} else {
		err = js.ns.UpdateWorkUnit(ctx, name.Bytes, key.Bytes, upd)
	}
	if replyhold.Deferred(ctx) {
		makesWork := updateMakesWork(upd) // upd's data is the request's: read it now
		replyhold.Reply(ctx, func(err error) (any, error) {
			return js.updateAnswer(name, key, err, func() bool { return makesWork })
		})
		return nil, nil
	}
	return js.updateAnswer(name, key, err, func() bool { return updateMakesWork(upd) })
}

// updateAnswer is update_work_unit's answer once the update is applied
// and durable. It wakes the long-polling workers if the update may have
// made work available (makesWork, asked only when someone waits).
func (js *JobServer) updateAnswer(name, key coordinate.Name, err error, makesWork func() bool) (any, error) {
	if err == nil && js.someoneWaits() && makesWork() {
		js.workMayBeAvailable()
	}
	return js.updateResult(name, key, err)
}

// updateResult is update_work_unit's answer to the update's error.
func (js *JobServer) updateResult(name, key coordinate.Name, err error) (any, error) {
	switch {
	case err == nil:
		return okPair(), nil
	case isLostLease(err):
		return pair(false, message(err.Error())), nil
	case errors.Is(err, coordinate.ErrNoSuchWorkSpec):
		return pair(false, noSuchWorkSpec(name)), nil
	case errors.Is(err, coordinate.ErrNoSuchWorkUnit):
		return pair(false, noSuchWorkUnit(key)), nil
	case errors.Is(err, coordinate.ErrNothingToDo):
		return pair(false, message("nothing to do")), nil
	case errors.Is(err, coordinate.ErrInvalidWorkUnit):
		return nil, valueError("%s", strings.TrimPrefix(err.Error(), coordinate.ErrInvalidWorkUnit.Error()+": "))
	}
	return nil, js.backendError("update_work_unit", err)
}
