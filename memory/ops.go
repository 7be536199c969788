package memory

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// op is one deterministic state change (see the package comment). apply
// must not read the clock and must not fail: the namespace validates the
// request before building the op.
type op interface {
	apply(s *state)
}

// opSetWorkSpec creates or replaces a spec from a validated definition.
type opSetWorkSpec struct {
	_ struct{} `cbor:",toarray"`

	Definition []byte
}

func (o *opSetWorkSpec) apply(s *state) {
	name, meta, _ := coordinate.ParseWorkSpec(o.Definition)
	sp := s.specs[name.Bytes]
	if sp == nil {
		sp = newSpec(name)
		s.specs[name.Bytes] = sp
	} else {
		// The name keeps the string kind it was first set with.
		meta.NextContinuous = sp.meta.NextContinuous
	}
	sp.definition = o.Definition
	sp.meta = meta
}

// opControlWorkSpec changes control settings of an existing spec.
type opControlWorkSpec struct {
	_ struct{} `cbor:",toarray"`

	Spec    string
	Control coordinate.WorkSpecControl
}

func (o *opControlWorkSpec) apply(s *state) {
	// Checked before the op was committed (ControlWorkSpec); a refused
	// control changes nothing here either.
	_ = s.specs[o.Spec].meta.Apply(o.Control)
}

// opDeleteWorkSpec removes a spec and all its units.
type opDeleteWorkSpec struct {
	_ struct{} `cbor:",toarray"`

	Spec string
	Now  int64
}

func (o *opDeleteWorkSpec) apply(s *state) {
	sp := s.specs[o.Spec]
	sp.untracked = s.cow == nil
	sp.keys = nil // going with the spec: not worth keeping in step
	if s.canDropWhole(sp) {
		s.dropSpecUnits(sp) // the same outcome without the walk (dropspec.go)
	} else {
		s.removeUnits(sp, allUnits(sp), o.Now, false)
	}
	delete(s.specs, o.Spec)
}

// opClear removes every spec and unit; workers stay.
type opClear struct {
	_ struct{} `cbor:",toarray"`

	// removed is how many specs there were.
	removed int
}

func (o *opClear) apply(s *state) {
	o.removed = len(s.specs)
	clear(s.specs)
	s.due = nil
	clear(s.dependents)
	clear(s.depTargets)
	clear(s.groups)
	s.workers.clearUnits()
}

// opAddWorkUnits adds or re-adds units (SEMANTICS §5.5, DECISIONS §4).
type opAddWorkUnits struct {
	_ struct{} `cbor:",toarray"`

	Spec  string
	Now   int64
	Units []coordinate.WorkUnitInput // data already copied
}

func (o *opAddWorkUnits) apply(s *state) {
	s.addUnits(s.specs[o.Spec], o.Units, o.Now)
}

// addUnits adds units to sp; a later item with the same key wins.
func (s *state) addUnits(sp *spec, units []coordinate.WorkUnitInput, now int64) {
	last := make(map[string]int, len(units))
	for i := range units {
		last[units[i].Key.Bytes] = i
	}
	for i := range units {
		in := &units[i]
		if last[in.Key.Bytes] != i {
			continue
		}
		data := in.Data
		if len(data) == 0 {
			data = coordinate.Null
		}
		var notBefore int64
		if in.Delay > 0 {
			notBefore = now + int64(in.Delay)
		}
		u, exists := sp.units[in.Key.Bytes]
		if !exists {
			u = &unit{spec: sp, key: in.Key.Bytes, keyText: in.Key.Text, heapIdx: -1}
			s.born(u)
			if in.Priority != nil {
				u.priority = *in.Priority
			}
			s.link(sp, u)
		} else {
			s.touch(u)
			if in.Priority != nil {
				u.priority = *in.Priority
			}
		}
		u.data = data
		u.notBefore = notBefore
		if in.Group != "" {
			s.joinGroup(u, in.Group, now) // re-adding without a group keeps the old one
		}

		status := u.status
		switch {
		case status == coordinate.StatusPending:
			// Keep the lease; new data only (DECISIONS §4).
		case len(in.DependsOn) > 0:
			s.dropEdges(u)
			var failed *coordinate.UnitRef
			status, failed = s.addEdges(u, in.DependsOn)
			u.expiration = 0
			u.setWorker(nil)
			if failed != nil {
				u.data = coordinate.WithTraceback(u.data, coordinate.DependencyFailedTraceback(*failed))
				u.ext.depFailed = true
				u.expiration = now
			}
		case status == coordinate.StatusBlocked:
			// Still waiting for its dependencies.
		default: // new, available or completed: available again
			s.dropEdges(u)
			status = coordinate.StatusAvailable
			u.expiration = 0
			u.setWorker(nil)
		}
		s.place(u, status, now)
	}
}

// opPrioritizeWorkUnits sets or adjusts unit priorities.
type opPrioritizeWorkUnits struct {
	_ struct{} `cbor:",toarray"`

	Spec       string
	Keys       []string
	Priority   *float64
	Adjustment float64
}

func (o *opPrioritizeWorkUnits) apply(s *state) {
	sp := s.specs[o.Spec]
	for _, k := range o.Keys {
		u := sp.units[k]
		if u == nil {
			continue
		}
		s.touch(u)
		if o.Priority != nil {
			u.priority = *o.Priority
		} else {
			u.priority += o.Adjustment
		}
		if u.where == inAvailable {
			sp.available.fix(u)
		}
	}
}

// opDeleteWorkUnits deletes units selected by a query.
type opDeleteWorkUnits struct {
	_ struct{} `cbor:",toarray"`

	Spec  string
	Query coordinate.DeleteQuery
	Now   int64
	// deleted is the number reported to the caller.
	deleted int
}

func (o *opDeleteWorkUnits) apply(s *state) {
	sp := s.specs[o.Spec]
	q := o.Query
	o.deleted = 0
	want := func(st coordinate.Status) bool { return slices.Contains(q.Statuses, st) }
	var victims []*unit
	switch {
	case q.All:
		victims = allUnits(sp)
		for st := range sp.archived {
			o.deleted += sp.archived[st]
			sp.archived[st] = 0
		}
	case q.Keys != nil:
		seen := make(map[*unit]bool, len(q.Keys))
		for _, k := range q.Keys {
			if u := sp.units[k]; u != nil && (len(q.Statuses) == 0 || want(u.status)) && !seen[u] {
				seen[u] = true
				victims = append(victims, u)
			}
		}
	case len(q.Statuses) > 0:
		for _, u := range sp.units {
			if want(u.status) {
				victims = append(victims, u)
			}
		}
		sortUnitsByRef(victims)
		for st := range sp.archived {
			if want(coordinate.Status(st)) {
				o.deleted += sp.archived[st]
				sp.archived[st] = 0
			}
		}
	}
	o.deleted += len(victims)
	s.removeUnits(sp, victims, o.Now, false)
}

// opDropUnits removes the units of explicit keys of one spec, in order:
// one chunk of a delete or archive that lets go of the namespace lock
// between chunks (unitdelete.go). The namespace chose the keys in the
// same lock hold, so apply removes every one still present without
// looking at its status (replay sees the same state). Archive counts them
// as archived; Forget zeroes the archived counts of those statuses first
// and counts them as deleted (delete by status or all).
type opDropUnits struct {
	_ struct{} `cbor:",toarray"`

	Spec    string
	Now     int64
	Keys    []string
	Archive bool
	Forget  []coordinate.Status

	// deleted is the number reported to the caller.
	deleted int
}

func (o *opDropUnits) apply(s *state) {
	sp := s.specs[o.Spec]
	o.deleted = 0
	for _, st := range o.Forget {
		o.deleted += sp.archived[st]
		sp.archived[st] = 0
	}
	for _, k := range o.Keys {
		if u := sp.units[k]; u != nil {
			s.removeUnit(u, o.Now, o.Archive)
			o.deleted++
		}
	}
}

// opUpdateWorkUnit applies update_work_unit to one existing unit. A
// non-zero LeaseID was checked against the unit's current lease.
type opUpdateWorkUnit struct {
	_ struct{} `cbor:",toarray"`

	Spec    string
	Key     string
	Now     int64
	Update  coordinate.WorkUnitUpdate // Data already copied
	LeaseID int64
}

func (o *opUpdateWorkUnit) apply(s *state) {
	sp := s.specs[o.Spec]
	u := sp.units[o.Key]
	now := time.Unix(0, o.Now)
	next, eff, err := coordinate.ApplyUpdate(coordinate.UnitState{
		Status:     u.status,
		Data:       u.data,
		Expiration: timeOf(u.expiration),
		Worker:     u.workerName(),
	}, o.Update, now)
	if err != nil {
		return // validated before the op was built
	}
	wasPending := u.status == coordinate.StatusPending
	s.touch(u)
	if !eff.LeaseEnded.IsZero() {
		s.workers.lapseAt(u, nanos(eff.LeaseEnded)) // before the holder is cleared
	}
	u.data = next.Data
	u.expiration = nanos(next.Expiration)
	u.setWorker(next.Worker)
	next.Status = coordinate.StillWaiting(next.Status, u.waits())
	s.place(u, next.Status, o.Now)
	if next.Status == coordinate.StatusPending && !wasPending {
		u.leaseID = s.nextLease
		s.nextLease++
	}
	if eff.Chain && sp.meta.Then != "" {
		s.chain(u, o.Now)
	}
}

// chain adds the units named by a finished unit's output to its spec's
// `then` successor (SEMANTICS §10). A missing successor, or output whose
// dependencies would close a cycle, adds nothing.
func (s *state) chain(u *unit, now int64) {
	target := s.specs[u.spec.meta.Then]
	if target == nil {
		return
	}
	units := coordinate.ChainedUnits(u.data, u.priority)
	if len(units) == 0 {
		return
	}
	if s.checkAdd(target, units) != nil {
		return
	}
	s.addUnits(target, units, now)
}

// opExpire applies the passage of time: due delayed units become
// available, expired leases end (AVAILABLE, or FAILED past max_retries)
// and expired worker records go, ending the leases of those that asked
// for it (ownerdeath.go).
type opExpire struct {
	_ struct{} `cbor:",toarray"`

	Now int64
}

func (o *opExpire) apply(s *state) {
	s.expiring = true
	defer func() { s.expiring = false }()
	s.endLeasesOfDeadOwners(o.Now)
	for _, sp := range s.dueSpecs(o.Now) {
		s.expireSpec(sp, o.Now)
	}
	s.workers.expire(o.Now)
}

// expireSpec makes sp's due delayed units available and ends its expired
// leases, earliest first.
func (s *state) expireSpec(sp *spec, now int64) {
	for u := sp.delayed.top(); u != nil && u.notBefore <= now; u = sp.delayed.top() {
		s.place(u, coordinate.StatusAvailable, now)
	}
	t := timeOf(now)
	for u := sp.pending.top(); u != nil && coordinate.LeaseExpired(timeOf(u.expiration), t); u = sp.pending.top() {
		st := coordinate.ExpireLease(coordinate.UnitState{Status: u.status, Data: u.data, Worker: u.workerName()},
			int(u.attempts), sp.meta.MaxRetries, t)
		s.workers.lapse(u)
		s.touch(u)
		u.data = st.Data
		u.expiration = nanos(st.Expiration)
		u.setWorker(st.Worker)
		s.place(u, coordinate.StillWaiting(st.Status, u.waits()), now)
	}
}

// needsExpire reports whether opExpire at now would change anything.
func (s *state) needsExpire(now int64) bool {
	return len(s.due) > 0 && s.due[0].due <= now || s.workers.needsExpire(now)
}

// opGetWork leases units of the chosen spec to a worker. Live, Keys is
// nil and apply takes the spec's best units and records their keys; on
// replay the recorded keys are leased.
type opGetWork struct {
	_ struct{} `cbor:",toarray"`

	Now        int64
	Worker     coordinate.Name
	Lease      time.Duration
	Spec       string
	Count      int
	Continuous bool
	Keys       []string
	// FirstLeaseID is the id of the first lease handed out.
	FirstLeaseID int64

	// maxBytes is WorkRequest.MaxBytes. Live only: replay leases the
	// recorded Keys, so it is not journaled.
	maxBytes int64
	attempts []coordinate.Attempt
}

func (o *opGetWork) apply(s *state) {
	sp := s.specs[o.Spec]
	o.attempts = nil
	if o.FirstLeaseID != 0 {
		s.nextLease = o.FirstLeaseID
	}
	o.FirstLeaseID = s.nextLease
	if o.Continuous {
		key := coordinate.ContinuousKey(time.Unix(0, o.Now))
		sp.meta.NextContinuous = time.Unix(0, o.Now+int64(sp.meta.Interval)).UTC()
		if _, exists := sp.units[key.Bytes]; exists {
			o.Keys = []string{}
			return
		}
		s.addUnits(sp, []coordinate.WorkUnitInput{{Key: key, Data: coordinate.EmptyMap}}, o.Now)
		o.Keys = []string{key.Bytes}
	}
	if o.Keys == nil {
		o.Keys = make([]string, 0, o.Count)
		var used int64
		for len(o.Keys) < o.Count && sp.available.Len() > 0 {
			u := sp.available.top()
			if !coordinate.WithinBytes(used, int64(len(u.data)), o.maxBytes, len(o.Keys) == 0) {
				break
			}
			used += int64(len(u.data))
			s.lease(u, o)
			o.Keys = append(o.Keys, u.key)
		}
		return
	}
	for _, k := range o.Keys {
		s.lease(sp.units[k], o)
	}
}

func (s *state) lease(u *unit, o *opGetWork) {
	s.touch(u)
	u.attempts++
	u.expiration = o.Now + int64(o.Lease)
	u.setWorker(&o.Worker)
	s.place(u, coordinate.StatusPending, o.Now)
	u.leaseID = s.nextLease
	s.nextLease++
	s.workers.handOut(o.Worker.Bytes, u)
	o.attempts = append(o.attempts, coordinate.Attempt{
		Spec:     u.spec.name,
		Key:      u.keyName(),
		Data:     u.data,
		Priority: u.priority,
		Worker:   o.Worker,
		Expires:  timeOf(u.expiration),
		ID:       u.leaseID,
	})
}

// opArchive applies a retention policy (SEMANTICS §12).
type opArchive struct {
	_ struct{} `cbor:",toarray"`

	Now    int64
	Specs  []string // empty = all
	Policy coordinate.RetentionPolicy
}

func (o *opArchive) apply(s *state) {
	names := o.Specs
	if len(names) == 0 {
		names = sortedSpecNames(s.specs)
	}
	for _, name := range names {
		sp := s.specs[name]
		if sp == nil {
			continue
		}
		for _, st := range []coordinate.Status{coordinate.StatusFinished, coordinate.StatusFailed} {
			var done []*unit
			for _, u := range sp.units {
				if u.status == st {
					done = append(done, u)
				}
			}
			slices.SortFunc(done, func(a, b *unit) int {
				return archiveOrder(a.expiration, a.key, b.expiration, b.key)
			})
			var drop []*unit
			for i, u := range done {
				if archives(o.Policy, i, u.expiration, o.Now) {
					drop = append(drop, u)
				}
			}
			s.removeUnits(sp, drop, o.Now, true)
		}
	}
}

// archiveOrder is the order archive ranks a spec's completed units of a
// status in, on (completion time, key) pairs: most recent completion
// first, then key (opArchive; archiveSpec, unitdelete.go, in chunks).
func archiveOrder(expA int64, keyA string, expB int64, keyB string) int {
	if c := cmp.Compare(expB, expA); c != 0 {
		return c
	}
	return strings.Compare(keyA, keyB)
}

// archives reports whether policy archives the completed unit of rank i
// in archiveOrder, completed at exp, at time now.
func archives(policy coordinate.RetentionPolicy, i int, exp, now int64) bool {
	tooMany := policy.MaxCount >= 0 && i >= policy.MaxCount
	tooOld := policy.MaxAge > 0 && exp < now-int64(policy.MaxAge)
	return tooMany || tooOld
}

// opHeartbeat creates or replaces a worker record.
type opHeartbeat struct {
	_ struct{} `cbor:",toarray"`

	Now       int64
	Heartbeat coordinate.Heartbeat
}

func (o *opHeartbeat) apply(s *state) { s.workers.heartbeat(o.Heartbeat, o.Now) }

// opUnregisterWorker removes a live worker record.
type opUnregisterWorker struct {
	_ struct{} `cbor:",toarray"`

	Worker string
}

func (o *opUnregisterWorker) apply(s *state) {
	if w := s.workers.byID[o.Worker]; w != nil {
		s.workers.remove(w)
	}
}

// opCancelGroup fails the unfinished units of a group.
type opCancelGroup struct {
	_ struct{} `cbor:",toarray"`

	Group string
	Now   int64

	cancelled int
}

func (o *opCancelGroup) apply(s *state) {
	o.cancelled = 0
	gr := s.groups[o.Group]
	if gr == nil {
		return
	}
	var victims []*unit
	s.cancelling = make(map[*unit]bool)
	defer func() { s.cancelling = nil }()
	for _, u := range sortedUnits(gr.members) {
		if !u.status.Completed() && u.status != 0 {
			victims = append(victims, u)
			s.cancelling[u] = true
		}
	}
	for _, u := range victims {
		s.touch(u)
		u.data = coordinate.WithTraceback(u.data, coordinate.TracebackCancelled)
		u.expiration = o.Now
		s.place(u, coordinate.StatusFailed, o.Now)
		o.cancelled++
	}
}

// removeUnits removes units in the given order.
func (s *state) removeUnits(sp *spec, units []*unit, now int64, archived bool) {
	for _, u := range units {
		if u.status != 0 && sp.units[u.key] == u {
			s.removeUnit(u, now, archived)
		}
	}
}

// allUnits lists a spec's units in key order.
func allUnits(sp *spec) []*unit {
	out := make([]*unit, 0, len(sp.units))
	for _, u := range sp.units {
		out = append(out, u)
	}
	slices.SortFunc(out, keyOrder)
	return out
}

func sortUnitsByRef(us []*unit) {
	slices.SortFunc(us, func(a, b *unit) int {
		if c := strings.Compare(a.spec.name.Bytes, b.spec.name.Bytes); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
}

func sortedSpecNames(specs map[string]*spec) []string {
	names := make([]string, 0, len(specs))
	for n := range specs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
