package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// namespace is one job queue. Every method takes mu for its whole run (no
// I/O happens under it), first applies expiries due at the current time,
// then reads, or validates and commits one op.
type namespace struct {
	name         string
	clock        coordinate.Clock
	enforceMinGB bool
	stallTimeout time.Duration

	// locks is the lock service (locks.go), apart from the journaled state.
	locks *lockTable

	mu sync.Mutex
	st *state
	// journal, when set, receives every committed op (replay tests).
	journal func(op)

	// wal is the backend's write-ahead journal; nil for a volatile backend.
	wal *wal
	// Guarded by mu: the ticket of the last record this lock hold
	// appended (0: none), and the buffer records are encoded into.
	ticket journalTicket
	rec    recordEncoder
	// appended is the ticket of the last record appended for ns by
	// anyone (guarded by mu): a call that reports another call's change
	// as its outcome waits for it (namespace.gone).
	appended journalTicket

	// betweenChunks, when set (tests), runs when a long call has just let
	// go of mu between two chunks of its work (yieldLock); relocked, when
	// it has taken mu again (benchmarks time the holds between them).
	betweenChunks, relocked func()
	// heapScanMax: see listing.go; deleteChunk: see unitdelete.go.
	heapScanMax, deleteChunk int

	// workReady holds the coordinate.WorkNotifier callbacks
	// (workready.go).
	workReady workListeners
}

var _ coordinate.Namespace = (*namespace)(nil)

func newNamespace(name string, opts Options) *namespace {
	return &namespace{
		name:         name,
		clock:        opts.Clock,
		enforceMinGB: opts.EnforceMinGB,
		stallTimeout: opts.StallTimeout,
		st:           newState(),
		locks:        newLockTable(opts.Clock),
		heapScanMax:  heapScanMax,
		deleteChunk:  deleteChunk,
	}
}

// begin locks the namespace and applies what expired before now. On
// success the caller must call ns.mu.Unlock.
func (ns *namespace) begin(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	ns.mu.Lock()
	return ns.expire(), nil
}

// expire applies what expired by now, with ns.mu held (begin and
// yieldLock take the lock then call it), and returns now.
func (ns *namespace) expire() int64 {
	now := ns.clock.Now().UnixNano()
	if ns.st.needsExpire(now) {
		ns.commit(&opExpire{Now: now})
	}
	return now
}

// commit applies an op: the one place state changes. With a journal, the
// op's record is appended (never blocking on disk) and its ticket kept for
// end to wait on.
func (ns *namespace) commit(o op) {
	o.apply(ns.st)
	if ns.journal != nil {
		ns.journal(o)
	}
	if ns.wal != nil {
		ns.ticket = ns.wal.append(&ns.rec, ns.name, o)
		ns.appended = ns.ticket
	}
}

// end closes a method begun with begin: it unlocks the namespace and, if
// the method committed anything, waits until its records are durable, so
// no change is acknowledged before it would survive a crash. The lock is
// never held across that wait. A journal failure replaces a nil *errp.
//
// A method that failed may still have committed something on the way (the
// expiries begin applies): it waits for that here, never through a held
// reply, whose builder sees only the journal's outcome and would answer
// success for the failed call.
func (ns *namespace) end(ctx context.Context, errp *error) {
	t := ns.ticket
	ns.ticket = 0
	ns.unlock()
	if t == 0 {
		return
	}
	if *errp != nil {
		_ = ns.wal.wait(ctx, t) // the call's own error stands
		return
	}
	if err := ns.wal.waitOrHold(ctx, t); err != nil {
		*errp = err
	}
}

// endLease closes GetWork: like end, but it does not wait for the records
// to be durable. A lease (or a continuous unit created for it) lost in a
// crash is harmless: the unit comes back AVAILABLE (or does not exist) and
// is handed out again, and since the journal is written in order, the
// worker's next acknowledged change (its finish, say) makes the lease
// durable first. See docs/persistence.md, "What is guaranteed". A journal
// failure already known is still reported.
func (ns *namespace) endLease(errp *error) {
	t := ns.ticket
	ns.ticket = 0
	ns.unlock()
	if t == 0 {
		return
	}
	if err := ns.wal.check(t); err != nil && *errp == nil {
		*errp = err
	}
}

func (ns *namespace) Name() string { return ns.name }

func (ns *namespace) spec(name string) (*spec, error) {
	sp := ns.st.specs[name]
	if sp == nil {
		return nil, fmt.Errorf("%w %q", coordinate.ErrNoSuchWorkSpec, name)
	}
	return sp, nil
}

// Work specs.

func (ns *namespace) SetWorkSpec(ctx context.Context, definition coordinate.Data) (_ *coordinate.WorkSpec, err error) {
	name, _, err := coordinate.ParseWorkSpec(definition)
	if err != nil {
		return nil, err
	}
	if _, err := ns.begin(ctx); err != nil {
		return nil, err
	}
	defer ns.end(ctx, &err)
	ns.commit(&opSetWorkSpec{Definition: slices.Clone(definition)})
	return specView(ns.st.specs[name.Bytes]), nil
}

func (ns *namespace) WorkSpec(ctx context.Context, name string) (_ *coordinate.WorkSpec, err error) {
	if _, err := ns.begin(ctx); err != nil {
		return nil, err
	}
	defer ns.end(ctx, &err)
	sp, err := ns.spec(name)
	if err != nil {
		return nil, err
	}
	return specView(sp), nil
}

func (ns *namespace) ListWorkSpecs(ctx context.Context, start string, limit int) (_ []*coordinate.WorkSpec, _ *coordinate.Name, err error) {
	if _, err := ns.begin(ctx); err != nil {
		return nil, nil, err
	}
	defer ns.end(ctx, &err)
	var specs []*coordinate.WorkSpec
	for _, n := range sortedSpecNames(ns.st.specs) {
		if n < start {
			continue
		}
		sp := ns.st.specs[n]
		if limit > 0 && len(specs) == limit {
			next := sp.name
			return specs, &next, nil
		}
		specs = append(specs, specView(sp))
	}
	return specs, nil, nil
}

func (ns *namespace) ControlWorkSpec(ctx context.Context, name string, control coordinate.WorkSpecControl) (err error) {
	if _, err := ns.begin(ctx); err != nil {
		return err
	}
	defer ns.end(ctx, &err)
	sp, err := ns.spec(name)
	if err != nil {
		return err
	}
	if meta := sp.meta; meta.Apply(control) != nil { // a trial on a copy: refuse before committing
		return fmt.Errorf("%w: cannot make non-continuous work spec %q continuous", coordinate.ErrCannotBeContinuous, name)
	}
	ns.commit(&opControlWorkSpec{Spec: name, Control: control})
	return nil
}

func (ns *namespace) DeleteWorkSpec(ctx context.Context, name string) (err error) {
	now, err := ns.begin(ctx)
	if err != nil {
		return err
	}
	defer ns.end(ctx, &err)
	sp, err := ns.spec(name)
	if err != nil {
		return err
	}
	for len(sp.units) > ns.deleteChunk && ns.st.deleteWalks(sp) {
		// Its units first, a chunk per lock hold (unitdelete.go).
		if err := ns.emptyInChunks(ctx, sp); err != nil {
			return ns.gone(err)
		}
		now = ns.expire()
	}
	ns.commit(&opDeleteWorkSpec{Spec: name, Now: now})
	return nil
}

func (ns *namespace) Clear(ctx context.Context) (_ int, err error) {
	if _, err := ns.begin(ctx); err != nil {
		return 0, err
	}
	defer ns.end(ctx, &err)
	o := &opClear{}
	ns.commit(o)
	return o.removed, nil
}

// Work units.

func (ns *namespace) AddWorkUnits(ctx context.Context, specName string, units []coordinate.WorkUnitInput) (err error) {
	now, err := ns.begin(ctx)
	if err != nil {
		return err
	}
	defer ns.end(ctx, &err)
	sp, err := ns.spec(specName)
	if err != nil {
		return err
	}
	if err := ns.st.checkAdd(sp, units); err != nil {
		return err
	}
	copied := make([]coordinate.WorkUnitInput, len(units))
	for i, u := range units {
		u.Data = cloneData(u.Data)
		u.DependsOn = slices.Clone(u.DependsOn)
		copied[i] = u
	}
	ns.commit(&opAddWorkUnits{Spec: specName, Now: now, Units: copied})
	return nil
}

// checkAdd rejects a batch whose dependency edges would close a cycle.
// Only the last item of a key is added, and it gives the unit the edges
// addUnits will: its own dependencies, or none when it has none, except
// that a PENDING unit, and a BLOCKED one re-added without dependencies,
// keep the edges they have, so those count as they are stored.
func (s *state) checkAdd(sp *spec, units []coordinate.WorkUnitInput) error {
	if !slices.ContainsFunc(units, func(in coordinate.WorkUnitInput) bool { return len(in.DependsOn) > 0 }) {
		return nil
	}
	last := make(map[string]int, len(units))
	for i := range units {
		last[units[i].Key.Bytes] = i
	}
	var batch map[coordinate.UnitRef][]coordinate.UnitRef
	var order []coordinate.UnitRef
	for i := range units {
		in := &units[i]
		if last[in.Key.Bytes] != i {
			continue // replaced by a later item
		}
		if u := sp.units[in.Key.Bytes]; u != nil {
			if u.status == coordinate.StatusPending {
				continue // a leased unit keeps running; its new edges are ignored
			}
			if u.status == coordinate.StatusBlocked && len(in.DependsOn) == 0 {
				continue // still waiting for its dependencies
			}
		}
		if batch == nil {
			batch = make(map[coordinate.UnitRef][]coordinate.UnitRef)
		}
		r := coordinate.UnitRef{Spec: sp.name.Bytes, Key: in.Key.Bytes}
		order = append(order, r)
		batch[r] = in.DependsOn
	}
	if batch == nil {
		return nil
	}
	if cycle := s.findCycle(batch, order); cycle != nil {
		return coordinate.CycleError(cycle)
	}
	return nil
}

func (ns *namespace) CountWorkUnits(ctx context.Context, specName string) (_ map[coordinate.Status]int, err error) {
	if _, err := ns.begin(ctx); err != nil {
		return nil, err
	}
	defer ns.end(ctx, &err)
	sp, err := ns.spec(specName)
	if err != nil {
		return nil, err
	}
	counts := make(map[coordinate.Status]int)
	for st := coordinate.StatusAvailable; st <= coordinate.StatusFailed; st++ {
		if n := sp.counts[st] + sp.archived[st]; n > 0 {
			counts[st] = n
		}
	}
	return counts, nil
}

func (ns *namespace) ListWorkUnits(ctx context.Context, specName string, q coordinate.WorkUnitQuery) (_ []*coordinate.WorkUnit, err error) {
	if _, err := ns.begin(ctx); err != nil {
		return nil, err
	}
	defer ns.end(ctx, &err)
	sp, err := ns.spec(specName)
	if err != nil {
		return nil, err
	}
	return ns.listUnits(ctx, sp, q) // listing.go
}

func (ns *namespace) GetWorkUnits(ctx context.Context, specName string, keys []string) (_ []*coordinate.WorkUnit, err error) {
	if _, err := ns.begin(ctx); err != nil {
		return nil, err
	}
	defer ns.end(ctx, &err)
	sp, err := ns.spec(specName)
	if err != nil {
		return nil, err
	}
	out := make([]*coordinate.WorkUnit, len(keys))
	for i, k := range keys {
		if u := sp.units[k]; u != nil {
			out[i] = unitView(u)
		}
	}
	return out, nil
}

func (ns *namespace) PrioritizeWorkUnits(ctx context.Context, specName string, keys []string, priority *float64, adjustment float64) (_ int, err error) {
	if _, err := ns.begin(ctx); err != nil {
		return 0, err
	}
	defer ns.end(ctx, &err)
	sp, err := ns.spec(specName)
	if err != nil {
		return 0, err
	}
	found := make(map[string]bool, len(keys))
	for _, k := range keys {
		if sp.units[k] != nil {
			found[k] = true
		}
	}
	o := &opPrioritizeWorkUnits{Spec: specName, Keys: slices.Clone(keys), Adjustment: adjustment}
	if priority != nil {
		p := *priority
		o.Priority = &p
	}
	ns.commit(o)
	return len(found), nil
}

func (ns *namespace) DeleteWorkUnits(ctx context.Context, specName string, q coordinate.DeleteQuery) (_ int, err error) {
	now, err := ns.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer ns.end(ctx, &err)
	sp, err := ns.spec(specName)
	if err != nil {
		return 0, err
	}
	if q.Keys == nil && (q.All || len(q.Statuses) > 0) && len(sp.units) > ns.deleteChunk {
		return ns.deleteInChunks(ctx, sp, q) // unitdelete.go
	}
	q.Keys = slices.Clone(q.Keys)
	q.Statuses = slices.Clone(q.Statuses)
	o := &opDeleteWorkUnits{Spec: specName, Query: q, Now: now}
	ns.commit(o)
	return o.deleted, nil
}

func (ns *namespace) UpdateWorkUnit(ctx context.Context, specName, key string, update coordinate.WorkUnitUpdate) (err error) {
	if err := update.Check(); err != nil {
		return err
	}
	now, err := ns.begin(ctx)
	if err != nil {
		return err
	}
	defer ns.end(ctx, &err)
	sp, err := ns.spec(specName)
	if err != nil {
		return err
	}
	u := sp.units[key]
	if u == nil {
		return fmt.Errorf("%w %q in work spec %q", coordinate.ErrNoSuchWorkUnit, key, specName)
	}
	return ns.update(u, update, now, 0)
}

func (ns *namespace) RetryWorkUnits(ctx context.Context, specName string, keys []string) (_ int, err error) {
	now, err := ns.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer ns.end(ctx, &err)
	sp, err := ns.spec(specName)
	if err != nil {
		return 0, err
	}
	retried := 0
	for _, k := range keys {
		u := sp.units[k]
		if u == nil || u.status != coordinate.StatusFailed {
			continue
		}
		if err := ns.update(u, coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable}, now, 0); err != nil {
			return retried, err
		}
		retried++
	}
	return retried, nil
}

func (ns *namespace) UpdateAttempt(ctx context.Context, ref coordinate.AttemptRef, update coordinate.WorkUnitUpdate) (err error) {
	if err := update.Check(); err != nil {
		return err
	}
	now, err := ns.begin(ctx)
	if err != nil {
		return err
	}
	defer ns.end(ctx, &err)
	u := ns.st.lookup(coordinate.UnitRef{Spec: ref.Spec, Key: ref.Key})
	if u == nil || u.status != coordinate.StatusPending || u.leaseID != ref.ID {
		return fmt.Errorf("%w: lease %d on %q/%q", coordinate.ErrLostLease, ref.ID, ref.Spec, ref.Key)
	}
	return ns.update(u, update, now, ref.ID)
}

// update validates an update against the transition table, then commits it.
func (ns *namespace) update(u *unit, update coordinate.WorkUnitUpdate, now int64, leaseID int64) error {
	_, _, err := coordinate.ApplyUpdate(coordinate.UnitState{Status: u.status}, update, time.Unix(0, now))
	if err != nil {
		return fmt.Errorf("work unit %q/%q: %w", u.spec.name.Bytes, u.key, err)
	}
	if update.Data != nil {
		update.Data = slices.Clone(update.Data)
	}
	if update.Worker != nil {
		w := *update.Worker
		update.Worker = &w
	}
	if update.LeaseTime != nil {
		lt := *update.LeaseTime
		update.LeaseTime = &lt
	}
	ns.commit(&opUpdateWorkUnit{Spec: u.spec.name.Bytes, Key: u.key, Now: now, Update: update, LeaseID: leaseID})
	return nil
}

func (ns *namespace) Archive(ctx context.Context, names []string, policy coordinate.RetentionPolicy) (err error) {
	now, err := ns.begin(ctx)
	if err != nil {
		return err
	}
	defer ns.end(ctx, &err)
	if policy.MaxCount < 0 && policy.MaxAge <= 0 {
		return nil // keeps everything
	}
	specs := names
	if len(specs) == 0 {
		specs = sortedSpecNames(ns.st.specs)
	}
	units := 0
	for _, name := range specs {
		if sp := ns.st.specs[name]; sp != nil {
			units += len(sp.units)
		}
	}
	if units > ns.deleteChunk {
		return ns.archiveInChunks(ctx, specs, policy, now) // unitdelete.go
	}
	ns.commit(&opArchive{Now: now, Specs: slices.Clone(names), Policy: policy})
	return nil
}

// Getting work.

func (ns *namespace) GetWork(ctx context.Context, req coordinate.WorkRequest) (_ []coordinate.Attempt, err error) {
	now, err := ns.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer ns.endLease(&err)
	cands := make([]coordinate.SpecCandidate, 0, len(ns.st.specs))
	for _, sp := range ns.st.specs {
		c := coordinate.SpecCandidate{
			Name:      sp.name.Bytes,
			Meta:      &sp.meta,
			Pending:   sp.counts[coordinate.StatusPending],
			Available: sp.available.Len(),
		}
		if top := sp.available.top(); top != nil {
			c.BestPriority = top.priority
		}
		c.ContinuousReady = sp.meta.Continuous &&
			sp.counts[coordinate.StatusAvailable] == 0 &&
			sp.counts[coordinate.StatusPending] == 0 &&
			now >= nanos(sp.meta.NextContinuous)
		cands = append(cands, c)
	}
	i, ok := coordinate.ChooseWorkSpec(cands, req, coordinate.SchedulerOptions{EnforceMinGB: ns.enforceMinGB})
	if !ok {
		return []coordinate.Attempt{}, nil
	}
	c := cands[i]
	lease := req.LeaseTime
	if lease <= 0 {
		lease = coordinate.DefaultLease
	}
	o := &opGetWork{
		Now:        now,
		Worker:     req.Worker,
		Lease:      lease,
		Spec:       c.Name,
		Count:      coordinate.WorkCount(c.Meta, c.Pending, req.MaxJobs),
		Continuous: c.Available == 0,
		maxBytes:   req.MaxBytes,
	}
	ns.commit(o)
	out := o.attempts
	if out == nil {
		out = []coordinate.Attempt{}
	}
	for i := range out {
		out[i].Data = slices.Clone(out[i].Data)
	}
	return out, nil
}

// Workers.

func (ns *namespace) WorkerHeartbeat(ctx context.Context, hb coordinate.Heartbeat) (err error) {
	now, err := ns.begin(ctx)
	if err != nil {
		return err
	}
	defer ns.end(ctx, &err)
	hb.Mode = cloneData(hb.Mode)
	hb.Data = cloneData(hb.Data)
	if hb.Parent != nil {
		p := *hb.Parent
		hb.Parent = &p
	}
	ns.commit(&opHeartbeat{Now: now, Heartbeat: hb})
	return nil
}

func (ns *namespace) UnregisterWorker(ctx context.Context, id string) (err error) {
	now, err := ns.begin(ctx)
	if err != nil {
		return err
	}
	defer ns.end(ctx, &err)
	w, release := ns.st.releasesOnExit(id)
	if w == nil {
		return fmt.Errorf("%w %q", coordinate.ErrNoSuchWorker, id)
	}
	if release {
		// Its registration lapses now, which ends its leases too
		// (ownerdeath.go).
		ns.commit(&opHeartbeat{Now: now, Heartbeat: coordinate.Heartbeat{
			Worker: w.id, Mode: w.mode, Data: w.data, Parent: w.parent, Expire: -1}})
		ns.commit(&opExpire{Now: now})
		return nil
	}
	ns.commit(&opUnregisterWorker{Worker: id})
	return nil
}

func (ns *namespace) Workers(ctx context.Context) (_ []*coordinate.WorkerInfo, err error) {
	if _, err := ns.begin(ctx); err != nil {
		return nil, err
	}
	defer ns.end(ctx, &err)
	ids := make([]string, 0, len(ns.st.workers.byID))
	for id := range ns.st.workers.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]*coordinate.WorkerInfo, len(ids))
	for i, id := range ids {
		out[i] = ns.st.workers.byID[id].info()
	}
	return out, nil
}

func (ns *namespace) Worker(ctx context.Context, id string) (_ *coordinate.WorkerInfo, err error) {
	if _, err := ns.begin(ctx); err != nil {
		return nil, err
	}
	defer ns.end(ctx, &err)
	w := ns.st.workers.byID[id]
	if w == nil {
		return nil, fmt.Errorf("%w %q", coordinate.ErrNoSuchWorker, id)
	}
	return w.info(), nil
}

func (ns *namespace) ChildWorkUnits(ctx context.Context, parent string) (_ []coordinate.ChildWorker, err error) {
	if _, err := ns.begin(ctx); err != nil {
		return nil, err
	}
	defer ns.end(ctx, &err)
	reg := &ns.st.workers
	ids := make([]string, 0, len(reg.children[parent]))
	for id := range reg.children[parent] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]coordinate.ChildWorker, 0, len(ids))
	for _, id := range ids {
		w := reg.byID[id]
		if w == nil {
			continue
		}
		out = append(out, coordinate.ChildWorker{Worker: w.id, Units: outstandingUnits(w)})
	}
	return out, nil
}

// Groups: GroupStatus and StalledGroups are in groups.go.

func (ns *namespace) CancelGroup(ctx context.Context, name string) (_ int, err error) {
	now, err := ns.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer ns.end(ctx, &err)
	o := &opCancelGroup{Group: name, Now: now}
	ns.commit(o)
	return o.cancelled, nil
}

// Views.

func specView(sp *spec) *coordinate.WorkSpec {
	return &coordinate.WorkSpec{
		Name:       sp.name,
		Definition: slices.Clone(sp.definition),
		Meta:       sp.meta,
	}
}

func unitView(u *unit) *coordinate.WorkUnit {
	wu := &coordinate.WorkUnit{
		Spec:       u.spec.name,
		Key:        u.keyName(),
		Data:       slices.Clone(u.data),
		Status:     u.status,
		Priority:   u.priority,
		Expiration: timeOf(u.expiration),
		Worker:     u.workerName(),
		NotBefore:  timeOf(u.notBefore),
		Attempts:   int(u.attempts),
	}
	if u.ext != nil {
		wu.Group = u.ext.group
		wu.DependsOn = slices.Clone(u.ext.deps)
	}
	return wu
}
