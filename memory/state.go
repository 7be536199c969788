package memory

import (
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// Where a unit currently sits (unit.where).
const (
	inNoHeap uint8 = iota
	inAvailable
	inDelayed
	inPending
)

// unit is one work unit. It is kept small: millions of them may be queued.
// Times are Unix nanoseconds, 0 meaning unset.
type unit struct {
	spec       *spec
	key        string
	data       []byte // one encoded CBOR item, never nil
	priority   float64
	expiration int64 // legacy lease_time: lease expiry (PENDING) or completion time
	notBefore  int64
	leaseID    int64 // current lease (PENDING), 0 otherwise
	worker     string
	ext        *unitExt // dependencies and group; nil for most units
	heapIdx    int32
	attempts   int32
	status     coordinate.Status
	where      uint8
	keyText    bool
	workerKind uint8 // noWorker, workerBytes or workerTextName
	// marks: bit 0 says whether the snapshot being captured has this
	// unit's value (or must not have it), see cow.go; bits 1-2 the dirty
	// epoch, see dirty.go. Unit fields a snapshot holds change only after
	// state.touch.
	marks uint8
	since uint32 // Unix second it last became runnable AVAILABLE (stats.go)
}

// unit.workerKind values.
const (
	noWorker uint8 = iota
	workerBytes
	workerTextName
)

// unitExt holds the rarely used parts of a unit.
type unitExt struct {
	group string
	// deps are the dependencies not yet FINISHED, in the order given.
	deps []coordinate.UnitRef
	// depFailed: the unit is FAILED because a dependency failed; a
	// retry of that dependency blocks it again. place clears it when the
	// unit leaves FAILED.
	depFailed bool
}

func (u *unit) ref() coordinate.UnitRef {
	return coordinate.UnitRef{Spec: u.spec.name.Bytes, Key: u.key}
}

func (u *unit) group() string {
	if u.ext == nil {
		return ""
	}
	return u.ext.group
}

// groupOf is u's group, nil when it has none (without a map lookup: most
// units have none, and every status change asks).
func (s *state) groupOf(u *unit) *group {
	if g := u.group(); g != "" {
		return s.groups[g]
	}
	return nil
}

// waits reports whether u has a dependency not FINISHED yet.
func (u *unit) waits() bool { return u.ext != nil && len(u.ext.deps) > 0 }

func (u *unit) keyName() coordinate.Name { return coordinate.Name{Bytes: u.key, Text: u.keyText} }

func (u *unit) workerName() *coordinate.Name {
	if u.workerKind == noWorker {
		return nil
	}
	return &coordinate.Name{Bytes: u.worker, Text: u.workerKind == workerTextName}
}

func (u *unit) setWorker(w *coordinate.Name) {
	switch {
	case w == nil:
		u.worker, u.workerKind = "", noWorker
	case w.Text:
		u.worker, u.workerKind = w.Bytes, workerTextName
	default:
		u.worker, u.workerKind = w.Bytes, workerBytes
	}
}

// spec is one work spec and its units.
type spec struct {
	name       coordinate.Name
	definition []byte
	meta       coordinate.WorkSpecMeta
	units      map[string]*unit
	available  unitHeap // AVAILABLE, not delayed: hand-out order
	delayed    unitHeap // AVAILABLE with not-before in the future
	pending    unitHeap // PENDING, by lease expiry
	counts     [coordinate.StatusFailed + 1]int
	archived   [coordinate.StatusFailed + 1]int
	ages       ageQueue              // when the AVAILABLE units became so (stats.go)
	events     coordinate.SpecEvents // transitions, for metrics
	// due is when the expiry pass next has work here (spec.dueAt);
	// dueIdx is the spec's place in state.due, -1 when not there.
	due    int64
	dueIdx int
	// cowSaved are the pre-images of this spec's units for the snapshot
	// capture under way (cow.go), by unit.
	cowSaved map[*unit]*unit
	// Changes since the last snapshot (dirty.go): the units changed or
	// added, the keys of units deleted, and whether the spec itself is
	// new (its units in older snapshots are not its own).
	dirty []*unit
	gone  []string
	fresh bool
	// untracked says the whole spec is being deleted while no capture is
	// under way: its units' changes are not tracked (dirty.go).
	untracked bool
	// extUnits counts the units in units with an ext (a group or
	// dependencies, now or once): while it is 0 no group or dependency
	// edge holds one of them (dropspec.go).
	extUnits int
	// waited counts the units in units that units wait for (state.dependents
	// has their ref), kept by state.link/unlink and addEdge/dropTarget
	// (dropspec.go).
	waited int

	// keys orders units by key once a listing needed it (keyindex.go):
	// nil until then; keysBuilt is open while it is being built.
	keys      *keyIndex
	keysBuilt chan struct{}
}

func newSpec(name coordinate.Name) *spec {
	return &spec{
		name:      name,
		units:     make(map[string]*unit),
		available: unitHeap{order: availableOrder},
		delayed:   unitHeap{order: notBeforeOrder},
		pending:   unitHeap{order: expiresOrder},
		dueIdx:    -1,
		fresh:     true,
	}
}

// group is the bookkeeping of one unit group.
type group struct {
	counts [coordinate.StatusFailed + 1]int
	// delayed counts the AVAILABLE members waiting out a delay (in their
	// spec's delayed heap): not runnable, so not what makes a group
	// stalled (groups.go).
	delayed      int
	lastProgress int64
	members      map[*unit]struct{}
}

// add counts member u as it is placed now (its status and heap); sub
// takes it out again. A member not yet placed (status 0) is not counted.
func (gr *group) add(u *unit) {
	if u.status != 0 {
		gr.counts[u.status]++
	}
	if u.where == inDelayed {
		gr.delayed++
	}
}

func (gr *group) sub(u *unit) {
	if u.status != 0 {
		gr.counts[u.status]--
	}
	if u.where == inDelayed {
		gr.delayed--
	}
}

// state is everything a namespace holds. Only ops (ops.go) change it.
type state struct {
	specs   map[string]*spec
	workers workerRegistry
	// dependents maps a unit (existing or not) to the units waiting for
	// it to finish, or failed because it failed.
	dependents map[coordinate.UnitRef]map[*unit]struct{}
	// depTargets counts the keys of dependents by spec name (dropspec.go).
	depTargets map[string]int
	groups     map[string]*group
	// due holds the specs with delayed or pending units by when the
	// expiry pass next has work in them (due.go).
	due indexedHeap[*spec]
	// nextLease is the id the next lease gets.
	nextLease int64

	// madeAvailable: a unit became AVAILABLE to hand out now, or a spec
	// at its max_running freed a slot, since the namespace last told its
	// work listeners (workready.go).
	madeAvailable bool

	// Scratch state of one op's apply, always reset before it returns.
	failCause  *coordinate.UnitRef // root of a dependency-failure cascade
	cancelling map[*unit]bool      // units opCancelGroup is failing
	expiring   bool                // opExpire is lapsing leases

	// Snapshot capture (cow.go): cow is non-nil while one is under way;
	// a unit whose snapshot mark equals snapParity is settled for it.
	cow        *cowCapture
	snapParity bool
	// Dirty tracking for delta snapshots (dirty.go): on in a journaled
	// namespace; dirtyEpoch is the epoch changes are marked with now.
	track      bool
	dirtyEpoch uint8
	// walkSpecDeletes makes opDeleteWorkSpec always remove units one by
	// one (dropspec.go), for tests and benchmarks comparing both ways.
	walkSpecDeletes bool
	// loose is set during recovery while the heaps hold their units in
	// no order (restore.go): from a snapshot with deltas after it until
	// the last delta is in (endLooseRestore).
	loose bool
	// pending holds, while loose, the workers and groups' progress of
	// the last snapshot or delta loaded, restored by endLooseRestore (each
	// delta lists them whole, replacing those before).
	pending *pendingRestore
}

func newState() *state {
	return &state{
		specs:      make(map[string]*spec),
		workers:    newWorkerRegistry(),
		dependents: make(map[coordinate.UnitRef]map[*unit]struct{}),
		depTargets: make(map[string]int),
		groups:     make(map[string]*group),
		nextLease:  1,
		dirtyEpoch: 1,
	}
}

// place moves u to status at time now, keeping heaps, counts, groups and
// dependents consistent. Every unit status change goes through here; a unit
// not yet counted has status 0.
func (s *state) place(u *unit, status coordinate.Status, now int64) {
	s.touch(u)
	sp := u.spec
	old := u.status
	sp.events.Note(old, status, s.expiring)
	wasTimed := u.where == inDelayed || u.where == inPending
	wasDelayed := u.where == inDelayed
	gr := s.groupOf(u)
	if gr != nil {
		gr.sub(u)
	}
	switch u.where {
	case inAvailable:
		sp.ages.remove(u.since)
		sp.available.remove(u)
	case inDelayed:
		sp.delayed.remove(u)
	case inPending:
		sp.pending.remove(u)
	}
	u.where = inNoHeap
	if old != 0 {
		sp.counts[old]--
	}
	sp.counts[status]++
	u.status = status
	if old == coordinate.StatusPending && status != coordinate.StatusPending && sp.available.Len() > 0 {
		if limit, ok := sp.meta.MaxRunningValue(); ok && sp.counts[coordinate.StatusPending] == limit-1 {
			// A max_running slot freed: the spec can hand out again.
			s.madeAvailable = true
		}
	}
	if status != coordinate.StatusFailed && u.ext != nil {
		// A retry of a failed dependency blocks again only the units still
		// FAILED because of it (deps.go).
		u.ext.depFailed = false
	}
	switch {
	case status == coordinate.StatusAvailable && u.notBefore > now:
		sp.delayed.push(u)
		u.where = inDelayed
	case status == coordinate.StatusAvailable:
		sp.available.push(u)
		u.where = inAvailable
		u.since = unixSecond(now)
		sp.ages.add(u.since)
		s.madeAvailable = true
	case status == coordinate.StatusPending:
		sp.pending.push(u)
		u.where = inPending
	}
	if wasTimed || u.where == inDelayed || u.where == inPending {
		s.noteDue(sp)
	}
	if status != coordinate.StatusPending {
		u.leaseID = 0
	}
	if gr != nil {
		gr.add(u)
		switch {
		case old != status:
			gr.lastProgress = now
		case wasDelayed && u.where == inAvailable:
			// A delay that ended is progress as of its end (what
			// PostgreSQL, which moves no unit then, reads from not_before).
			gr.lastProgress = max(gr.lastProgress, u.notBefore)
		}
	}
	if old == status {
		return
	}
	if status.Completed() {
		s.workers.dropUnit(u)
	}
	if len(s.dependents) > 0 {
		switch {
		case status == coordinate.StatusFinished:
			if old == coordinate.StatusFailed {
				// Finish wins over fail (SEMANTICS §5.3): the units failed
				// because of u wait for it again, as after a retry, and
				// then go on as after any finish.
				s.reblockDependents(u.ref(), now)
			}
			s.resolveDependents(u, now)
		case status == coordinate.StatusFailed:
			s.failDependents(u.ref(), now)
		case old == coordinate.StatusFailed:
			s.reblockDependents(u.ref(), now)
		}
	}
}

// removeUnit deletes u from its spec. archived says it is dropped by the
// retention policy (and counted) rather than deleted.
func (s *state) removeUnit(u *unit, now int64, archived bool) {
	s.touch(u)
	sp := u.spec
	switch u.where {
	case inAvailable:
		sp.ages.remove(u.since)
		sp.available.remove(u)
	case inDelayed:
		sp.delayed.remove(u)
	case inPending:
		sp.pending.remove(u)
	}
	if u.where == inDelayed || u.where == inPending {
		s.noteDue(sp)
	}
	if u.ext != nil {
		s.leaveGroup(u, now) // while u.where still names its heap (group.sub)
	}
	u.where = inNoHeap
	sp.counts[u.status]--
	if archived {
		sp.archived[u.status]++
	}
	s.unlink(sp, u)
	s.markGone(u)
	s.workers.dropUnit(u)
	if u.ext != nil {
		s.dropEdges(u)
	}
	if len(s.dependents) > 0 {
		s.failDependents(u.ref(), now)
	}
	u.status = 0
}

// nanos converts a time to the stored form.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// timeOf converts a stored time back; 0 is the zero time.
func timeOf(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
