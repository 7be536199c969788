package pyimport

import (
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// maxRelativeLease is the largest lease_time, in seconds, that is relative
// (MAX_LEASE_SECONDS in constants.py). The Python daemon logs the result
// of get_work as an update_work_unit whose lease_time is the absolute
// expiry (work_spec.py, _update_work_wu); larger values are read as that.
const maxRelativeLease = 24 * 3600

// Replay applies logged actions to st in order, as JobQueue._run_log_action
// would at time now, with two differences that keep what the Python daemon
// held when it wrote the log rather than what its replay would have made
// of it: an absolute lease_time (get_work's record) sets that expiry, and
// the worker_id of a record that leaves a unit PENDING is recorded.
// Actions on specs or units that do not exist are skipped, as Python
// skips them. An argument of the wrong type is a *FormatError and st may
// then be partly changed: replay into a State nobody else uses.
func Replay(st *State, actions []Action, now time.Time) error {
	for i := range actions {
		a := &actions[i]
		var err error
		switch a.Name {
		case "set_work_spec":
			err = st.setWorkSpec(a)
		case "del_work_spec":
			var nm coordinate.Name
			if nm, err = nameArg(a, 0, "work spec name"); err == nil {
				delete(st.Specs, nm.Bytes)
			}
		case "add_work_unit":
			err = st.addWorkUnit(a, now)
		case "update_work_unit":
			err = st.updateWorkUnit(a, now)
		case "del_work_units":
			err = st.delWorkUnits(a)
		default:
			err = a.errorf("unknown action")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func nameArg(a *Action, i int, what string) (coordinate.Name, error) {
	nm, ok := name(a.Args[i])
	if !ok {
		return nm, a.errorf("the %s must be a string, got %s", what, describe(a.Args[i]))
	}
	return nm, nil
}

func (st *State) setWorkSpec(a *Action) error {
	def := coordinate.Data(a.Args[0])
	nm, meta, err := coordinate.ParseWorkSpec(def)
	if err != nil {
		return a.errorf("%v", err)
	}
	sp := st.Specs[nm.Bytes]
	if sp == nil {
		sp = &Spec{Name: nm, Archived: make(map[coordinate.Status]int), Units: make(map[string]*Unit)}
		st.Specs[nm.Bytes] = sp
	}
	// WorkSpec._update_data: every control setting is derived again.
	sp.Definition = def
	sp.Weight = meta.Weight
	sp.Paused = meta.Paused
	sp.Continuous = meta.CanBeContinuous
	sp.Interval = meta.Interval.Seconds()
	sp.MaxRunning = meta.MaxRunning
	return nil
}

func (st *State) addWorkUnit(a *Action, now time.Time) error {
	specName, err := nameArg(a, 0, "work spec name")
	if err != nil {
		return err
	}
	key, err := nameArg(a, 1, "work unit key")
	if err != nil {
		return err
	}
	if sp := st.Specs[specName.Bytes]; sp != nil {
		sp.add(coordinate.WorkUnitInput{Key: key, Data: coordinate.Data(a.Args[2])}, now)
	}
	return nil
}

// add is WorkSpec._add_work_units for one unit: a new key is AVAILABLE
// (priority from in, else 0); an existing one gets the data and becomes
// AVAILABLE, keeping its priority.
func (sp *Spec) add(in coordinate.WorkUnitInput, now time.Time) {
	if u := sp.Units[in.Key.Bytes]; u != nil {
		u.apply(coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable, Data: in.Data}, now)
		return
	}
	u := &Unit{Key: in.Key, Data: in.Data, Status: coordinate.StatusAvailable}
	if in.Priority != nil {
		u.Priority = *in.Priority
	}
	sp.Units[in.Key.Bytes] = u
}

// apply runs coordinate.ApplyUpdate (the update_work_unit transition
// table both daemons share) on u.
func (u *Unit) apply(upd coordinate.WorkUnitUpdate, now time.Time) coordinate.UpdateEffect {
	before := coordinate.UnitState{Status: u.Status, Data: u.Data, Expiration: unixTime(u.LeaseTime), Worker: u.Worker}
	after, eff, err := coordinate.ApplyUpdate(before, upd, now)
	if err != nil {
		return eff // nothing to do
	}
	u.Status, u.Data, u.LeaseTime, u.Worker = after.Status, after.Data, unixSeconds(after.Expiration), after.Worker
	return eff
}

func (st *State) updateWorkUnit(a *Action, now time.Time) error {
	specName, err := nameArg(a, 0, "work spec name")
	if err != nil {
		return err
	}
	key, err := nameArg(a, 1, "work unit key")
	if err != nil {
		return err
	}
	opts, ok := stringMap(a.Args[2])
	if !ok {
		return a.errorf("the options must be a map, got %s", describe(a.Args[2]))
	}
	var upd coordinate.WorkUnitUpdate
	var absolute float64
	if v, ok := opts["status"]; ok && !isNull(v) {
		s, ok := integer(v)
		if !ok || !coordinate.Status(s).Valid() || coordinate.Status(s) == coordinate.StatusBlocked {
			return a.errorf("unit %q: status must be 1, 3, 4 or 5, got %s", key.Bytes, describeStatus(v))
		}
		upd.Status = coordinate.Status(s)
	}
	if v, ok := opts["lease_time"]; ok && !isNull(v) {
		secs, ok := number(v)
		if !ok {
			return a.errorf("unit %q: lease_time must be a number, got %s", key.Bytes, describe(v))
		}
		if secs > maxRelativeLease {
			// Set below, whether or not it has passed by now: the log
			// goes on as it happened (a worker finishing in time), and
			// a lease that has lapsed since lapses when imported.
			absolute = secs
			secs = 1
		}
		d := secondsDuration(secs)
		upd.LeaseTime = &d
	}
	if v, ok := opts["data"]; ok && !isNull(v) {
		upd.Data = coordinate.Data(v)
	}
	var worker *coordinate.Name
	if v, ok := opts["worker_id"]; ok {
		if worker, ok = optName(v); !ok {
			return a.errorf("unit %q: worker_id must be a string or null, got %s", key.Bytes, describe(v))
		}
	}
	sp := st.Specs[specName.Bytes]
	if sp == nil || sp.Units[key.Bytes] == nil || (upd.Status == 0 && upd.LeaseTime == nil) {
		return nil
	}
	u := sp.Units[key.Bytes]
	eff := u.apply(upd, now)
	if absolute != 0 && (u.Status == coordinate.StatusPending || upd.Status == 0) {
		u.LeaseTime = absolute
	}
	if u.Status == coordinate.StatusPending {
		if upd.Status == coordinate.StatusPending && worker != nil {
			w := *worker
			u.Worker = &w
		}
	}
	if eff.Chain {
		st.chain(sp, u, now)
	}
	return nil
}

// chain is WorkSpec._trigger_flow: a finished unit's output becomes units
// of the spec's `then`, if that spec exists.
func (st *State) chain(sp *Spec, u *Unit, now time.Time) {
	_, meta, err := coordinate.ParseWorkSpec(sp.Definition)
	if err != nil || meta.Then == "" {
		return
	}
	next := st.Specs[meta.Then]
	if next == nil {
		return
	}
	for _, in := range coordinate.ChainedUnits(u.Data, u.Priority) {
		next.add(in, now)
	}
}

func (st *State) delWorkUnits(a *Action) error {
	specName, err := nameArg(a, 0, "work spec name")
	if err != nil {
		return err
	}
	opts, ok := stringMap(a.Args[1])
	if !ok {
		return a.errorf("the options must be a map, got %s", describe(a.Args[1]))
	}
	var filter coordinate.Status
	if v, ok := opts["state"]; ok && !isNull(v) {
		s, ok := integer(v)
		if !ok {
			return a.errorf("state must be an integer, got %s", describe(v))
		}
		filter = coordinate.Status(s)
	}
	var keys []coordinate.Name
	hasKeys := false
	if v, ok := opts["work_unit_keys"]; ok && !isNull(v) {
		list, ok := array(v)
		if !ok {
			return a.errorf("work_unit_keys must be a list, got %s", describe(v))
		}
		hasKeys = true
		for _, k := range list {
			nm, ok := name(k)
			if !ok {
				return a.errorf("work_unit_keys must hold strings, got %s", describe(k))
			}
			keys = append(keys, nm)
		}
	}
	all := false
	if v, ok := opts["all"]; ok {
		all = truthy(v)
	}
	sp := st.Specs[specName.Bytes]
	if sp == nil {
		return nil
	}
	switch {
	case all:
		clear(sp.Units)
		clear(sp.Archived)
	case hasKeys:
		for _, k := range keys {
			if u := sp.Units[k.Bytes]; u != nil && (filter == 0 || u.Status == filter) {
				delete(sp.Units, k.Bytes)
			}
		}
	case filter != 0:
		for k, u := range sp.Units {
			if u.Status == filter {
				delete(sp.Units, k)
			}
		}
		delete(sp.Archived, filter)
	}
	return nil
}

// truthy is Python's truth value for the scalars a client sends.
func truthy(v item) bool {
	if isNull(v) {
		return false
	}
	if b, ok := boolean(v); ok {
		return b
	}
	if f, ok := number(v); ok {
		return f != 0
	}
	var s string
	if major(v) == 2 || major(v) == 3 {
		return decMode.Unmarshal(v, &s) == nil && s != ""
	}
	if list, ok := array(v); ok {
		return len(list) > 0
	}
	if m, ok := stringMap(v); ok {
		return len(m) > 0
	}
	return true
}
