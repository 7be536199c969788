package coordinatetest

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// text and bin make Names of the two CBOR string kinds.
func text(s string) coordinate.Name { return coordinate.Name{Bytes: s, Text: true} }
func bin(s string) coordinate.Name  { return coordinate.Name{Bytes: s} }

func ptr[T any](v T) *T { return &v }

// spec creates or replaces a work spec from a definition given as a Go map
// (encoded with text keys) and fails the test on error.
func (e *env) spec(def m) *coordinate.WorkSpec {
	e.t.Helper()
	ws, err := e.ns.SetWorkSpec(e.ctx, enc(e.t, def))
	if err != nil {
		e.t.Fatalf("SetWorkSpec(%v): %v", def, err)
	}
	return ws
}

// getSpec reads a spec and fails the test on error.
func (e *env) getSpec(name string) *coordinate.WorkSpec {
	e.t.Helper()
	ws, err := e.ns.WorkSpec(e.ctx, name)
	if err != nil {
		e.t.Fatalf("WorkSpec(%q): %v", name, err)
	}
	return ws
}

// control applies a ControlWorkSpec and fails the test on error.
func (e *env) control(name string, c coordinate.WorkSpecControl) {
	e.t.Helper()
	if err := e.ns.ControlWorkSpec(e.ctx, name, c); err != nil {
		e.t.Fatalf("ControlWorkSpec(%q): %v", name, err)
	}
}

// unit is a WorkUnitInput with a text key and data.
func (e *env) unit(key string, data any) coordinate.WorkUnitInput {
	return coordinate.WorkUnitInput{Key: text(key), Data: enc(e.t, data)}
}

// addKeys adds units with text keys and data {} to a spec.
func (e *env) addKeys(spec string, keys ...string) {
	e.t.Helper()
	in := make([]coordinate.WorkUnitInput, len(keys))
	for i, k := range keys {
		in[i] = e.unit(k, m{})
	}
	e.add(spec, in...)
}

// add adds units and fails the test on error.
func (e *env) add(spec string, units ...coordinate.WorkUnitInput) {
	e.t.Helper()
	if err := e.ns.AddWorkUnits(e.ctx, spec, units); err != nil {
		e.t.Fatalf("AddWorkUnits(%q, %d units): %v", spec, len(units), err)
	}
}

// get reads one unit; it fails the test on error and returns nil when the
// unit does not exist.
func (e *env) get(spec, key string) *coordinate.WorkUnit {
	e.t.Helper()
	us, err := e.ns.GetWorkUnits(e.ctx, spec, []string{key})
	if err != nil {
		e.t.Fatalf("GetWorkUnits(%q, %q): %v", spec, key, err)
	}
	if len(us) != 1 {
		e.t.Fatalf("GetWorkUnits(%q, [%q]) returned %d entries, want 1", spec, key, len(us))
	}
	return us[0]
}

// mustGet reads one unit that must exist.
func (e *env) mustGet(spec, key string) *coordinate.WorkUnit {
	e.t.Helper()
	u := e.get(spec, key)
	if u == nil {
		e.t.Fatalf("unit %q/%q does not exist", spec, key)
	}
	return u
}

// status reads one unit's reported status (0 when it does not exist).
func (e *env) status(spec, key string) coordinate.Status {
	e.t.Helper()
	u := e.get(spec, key)
	if u == nil {
		return 0
	}
	return u.Status
}

// checkStatus fails the test unless each key of spec has the status given.
func (e *env) checkStatus(spec string, want coordinate.Status, keys ...string) {
	e.t.Helper()
	for _, k := range keys {
		if got := e.status(spec, k); got != want {
			e.t.Errorf("unit %q/%q status = %v, want %v", spec, k, got, want)
		}
	}
}

// counts returns CountWorkUnits and fails the test on error.
func (e *env) counts(spec string) map[coordinate.Status]int {
	e.t.Helper()
	c, err := e.ns.CountWorkUnits(e.ctx, spec)
	if err != nil {
		e.t.Fatalf("CountWorkUnits(%q): %v", spec, err)
	}
	return c
}

// checkCounts fails the test unless CountWorkUnits equals want (statuses
// with no units must be absent).
func (e *env) checkCounts(spec string, want map[coordinate.Status]int) {
	e.t.Helper()
	got := e.counts(spec)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		e.t.Errorf("CountWorkUnits(%q) = %v, want %v", spec, got, want)
	}
}

// work calls GetWork and fails the test on error.
func (e *env) work(req coordinate.WorkRequest) []coordinate.Attempt {
	e.t.Helper()
	if req.LeaseTime == 0 {
		req.LeaseTime = 300 * time.Second
	}
	as, err := e.ns.GetWork(e.ctx, req)
	if err != nil {
		e.t.Fatalf("GetWork(%+v): %v", req, err)
	}
	return as
}

// workOne asks for one unit for worker and fails unless exactly one is
// handed out.
func (e *env) workOne(worker string) coordinate.Attempt {
	e.t.Helper()
	as := e.work(coordinate.WorkRequest{Worker: text(worker), MaxJobs: 1})
	if len(as) != 1 {
		e.t.Fatalf("GetWork for %q returned %d attempts, want 1", worker, len(as))
	}
	return as[0]
}

// noWork fails the test unless GetWork hands out nothing.
func (e *env) noWork(req coordinate.WorkRequest) {
	e.t.Helper()
	if as := e.work(req); len(as) != 0 {
		e.t.Errorf("GetWork(%+v) returned %s, want no work", req, attemptKeys(as))
	}
}

// update calls UpdateWorkUnit and fails the test on error.
func (e *env) update(spec, key string, upd coordinate.WorkUnitUpdate) {
	e.t.Helper()
	if err := e.ns.UpdateWorkUnit(e.ctx, spec, key, upd); err != nil {
		e.t.Fatalf("UpdateWorkUnit(%q, %q, %+v): %v", spec, key, upd, err)
	}
}

// finish marks a unit FINISHED, optionally with new data (nil = keep).
func (e *env) finish(spec, key string, data any) {
	e.t.Helper()
	upd := coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}
	if data != nil {
		upd.Data = enc(e.t, data)
	}
	e.update(spec, key, upd)
}

// fail marks a unit FAILED.
func (e *env) fail(spec, key string) {
	e.t.Helper()
	e.update(spec, key, coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed})
}

// list calls ListWorkUnits and returns the keys in order.
func (e *env) list(spec string, q coordinate.WorkUnitQuery) []string {
	e.t.Helper()
	us, err := e.ns.ListWorkUnits(e.ctx, spec, q)
	if err != nil {
		e.t.Fatalf("ListWorkUnits(%q, %+v): %v", spec, q, err)
	}
	keys := make([]string, len(us))
	for i, u := range us {
		keys[i] = u.Key.Bytes
	}
	return keys
}

// heartbeat registers a worker with text id.
func (e *env) heartbeat(id string, parent *coordinate.Name, expire time.Duration) {
	e.t.Helper()
	err := e.ns.WorkerHeartbeat(e.ctx, coordinate.Heartbeat{
		Worker: text(id), Mode: enc(e.t, "RUN"), Data: enc(e.t, m{"id": id}), Parent: parent, Expire: expire,
	})
	if err != nil {
		e.t.Fatalf("WorkerHeartbeat(%q): %v", id, err)
	}
}

// wantErr fails the test unless err wraps target.
func (e *env) wantErr(what string, err, target error) {
	e.t.Helper()
	if !errors.Is(err, target) {
		e.t.Errorf("%s: error = %v, want one wrapping %q", what, err, target)
	}
}

// attemptKeys lists the keys of attempts, sorted, for comparisons.
func attemptKeys(as []coordinate.Attempt) []string {
	keys := make([]string, len(as))
	for i, a := range as {
		keys[i] = a.Key.Bytes
	}
	sort.Strings(keys)
	return keys
}

// attemptSpecs lists the distinct spec names of attempts, sorted.
func attemptSpecs(as []coordinate.Attempt) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range as {
		if !seen[a.Spec.Bytes] {
			seen[a.Spec.Bytes] = true
			out = append(out, a.Spec.Bytes)
		}
	}
	sort.Strings(out)
	return out
}

// checkKeys fails the test unless got equals want (both in order).
func (e *env) checkKeys(what string, got, want []string) {
	e.t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		e.t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// checkTime fails the test unless got equals want.
func (e *env) checkTime(what string, got, want time.Time) {
	e.t.Helper()
	if !got.Equal(want) {
		e.t.Errorf("%s = %v, want %v (%s after epoch)", what, got, want, want.Sub(Epoch))
	}
}

// keysN returns n keys "prefix000", "prefix001", ...
func keysN(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}
