package postgres

import (
	"context"
	_ "embed"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// updateRequest is one UpdateWorkUnit or UpdateAttempt call waiting for the
// committer.
type updateRequest struct {
	ns      *namespace
	spec    string
	key     string
	upd     coordinate.WorkUnitUpdate
	leaseID *int64 // UpdateAttempt: the lease that must still hold
	now     time.Time
	// slow keeps the request off the fast finish path (finish.go): it
	// tried that path and the unit did not match.
	slow bool
	// chains: the data sent names units to chain (coordinate.ChainedUnits),
	// whether or not the spec has a `then`; set by splitFast.
	chains bool
	// onlyFailed (RetryWorkUnits) applies the update only to a unit that
	// is FAILED now; any other answers errNotFailed.
	onlyFailed bool
}

// unit names the unit r updates.
func (r *updateRequest) unit() unitKey { return unitKey{r.ns.id, r.spec, r.key} }

func (ns *namespace) UpdateWorkUnit(ctx context.Context, spec, key string, update coordinate.WorkUnitUpdate) error {
	if err := update.Check(); err != nil {
		return err
	}
	return ns.b.commits.submit(ctx, &commitItem{upd: &updateRequest{ns: ns, spec: spec, key: key, upd: update, now: ns.now()}})
}

func (ns *namespace) UpdateAttempt(ctx context.Context, ref coordinate.AttemptRef, update coordinate.WorkUnitUpdate) error {
	if err := update.Check(); err != nil {
		return err
	}
	id := ref.ID
	return ns.b.commits.submit(ctx, &commitItem{upd: &updateRequest{ns: ns, spec: ref.Spec, key: ref.Key, upd: update, leaseID: &id, now: ns.now()}})
}

var (
	//go:embed queries/lock_units.sql
	lockUnitsSQL string
	//go:embed queries/unit_waits.sql
	unitWaitsSQL string
	//go:embed queries/write_units.sql
	writeUnitsSQL string
)

// lockedUnit is a unit row locked by an update batch, with the spec facts
// the transition needs.
type lockedUnit struct {
	nsID       int64
	specID     int64
	specName   coordinate.Name
	then       string
	maxRetries int
	priority   float64
	attempts   int
	leaseID    *int64
	grp        []byte
	st         coordinate.UnitState
	stored     coordinate.Status // status in the database before this batch
	dirty      bool
	completed  bool
	expired    bool // its lease lapsed in this batch (expireInGo)
	// lapsedBy and lapsedAt are the holder and expiry of the lease that
	// lapsed (expireInGo), or that a lease time not in the future ended
	// (coordinate.UpdateEffect.LeaseEnded), for the holder's outstanding
	// entry; lapsedBy is nil when neither happened.
	lapsedBy *coordinate.Name
	lapsedAt time.Time
	// outstanding: some worker has the unit in its outstanding set.
	outstanding bool
	key         string
	// waits: the unit has dependencies not yet FINISHED (unit_dep rows).
	waits bool
}

// lockedUnits are the units an update batch locked, by address.
type lockedUnits struct {
	byAddr  map[unitKey]*lockedUnit
	ordered []*lockedUnit // in the order they were locked
}

// queueLockUnits queues the statement that locks the units of updates,
// then the one that reads which of them wait on dependencies, at a
// snapshot taken after the lock (unit_waits.sql). Each unit is found
// through its index by a nested loop, and locked in (namespace, spec,
// key) order so concurrent batches lock in the same order.
func queueLockUnits(b *pgx.Batch, updates []*updateRequest) {
	addrs := make([]unitKey, 0, len(updates))
	seen := map[unitKey]bool{}
	for _, r := range updates {
		a := r.unit()
		if !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i].less(addrs[j]) })
	nsIDs, specs, keys := unitKeyArrays(addrs)
	b.Queue(lockUnitsSQL, nsIDs, specs, keys)
	b.Queue(unitWaitsSQL, nsIDs, specs, keys)
}

// readLockedUnits reads the answers of the two statements queueLockUnits
// queued.
func readLockedUnits(br pgx.BatchResults) (*lockedUnits, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	lus, err := scanLockedUnits(rows)
	if err != nil {
		return nil, err
	}
	rows, err = br.Query()
	if err != nil {
		return nil, err
	}
	var (
		nsID      int64
		spec, key []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&nsID, &spec, &key}, func() error {
		if lu := lus.byAddr[unitKey{nsID, string(spec), string(key)}]; lu != nil {
			lu.waits = true
		}
		return nil
	})
	return lus, err
}

func scanLockedUnits(rows pgx.Rows) (*lockedUnits, error) {
	lus := &lockedUnits{byAddr: map[unitKey]*lockedUnit{}}
	defer rows.Close()
	for rows.Next() {
		var (
			lu                  lockedUnit
			specName, then, key []byte
			data, worker        []byte
			specText            bool
			workerText          *bool
			status              int16
			expires             *int64
			maxRetries, att     int32
		)
		if err := rows.Scan(&lu.nsID, &lu.specID, &specName, &specText, &then, &maxRetries,
			&key, &data, &status, &lu.priority, &expires, &worker, &workerText, &lu.leaseID, &att, &lu.grp,
			&lu.outstanding); err != nil {
			return nil, err
		}
		lu.specName = coordinate.Name{Bytes: string(specName), Text: specText}
		lu.then = string(then)
		lu.maxRetries = int(maxRetries)
		lu.attempts = int(att)
		lu.stored = coordinate.Status(status)
		lu.st = coordinate.UnitState{Status: lu.stored, Data: data, Expiration: timeOf(expires), Worker: nameOf(worker, workerText)}
		lu.key = string(key)
		lus.byAddr[unitKey{lu.nsID, string(specName), string(key)}] = &lu
		lus.ordered = append(lus.ordered, &lu)
	}
	return lus, rows.Err()
}

// chainJob is the chaining of one finished unit (SEMANTICS §10).
type chainJob struct {
	ns   *namespace
	from *lockedUnit
	// units are the units to add, one per key (dedupeUnits: the last
	// named wins, as in add_work_units).
	units []coordinate.WorkUnitInput
	now   time.Time
}

// afterUpdates is the work an update batch leaves for after its writes:
// chaining, and failing or re-blocking dependents.
type afterUpdates struct {
	chains   []chainJob
	failed   []unitKey
	unfailed []unitKey
	// refinished are units finished after they had failed (finish wins
	// over fail): their dependents are blocked again (unfailed) before
	// their edges are resolved, so the resolution waits for run.
	refinished []unitKey
	now        time.Time
	events     specEvents // the batch's transitions, with those run adds
	// ready: namespaces where the batch unblocked dependents (workready.go).
	ready []int64
}

func (a *afterUpdates) empty() bool {
	return len(a.chains) == 0 && len(a.failed) == 0 && len(a.unfailed) == 0 && len(a.refinished) == 0
}

// run applies the leftover work inside the batch's transaction and
// queues its last writes (the refinished units' edges, counts, group
// progress) on tail, for the round trip that commits; the caller reads
// tail's results, which notes in a.ready what the resolution unblocked.
func (a *afterUpdates) run(ctx context.Context, tx dbtx, tail *pgx.Batch) error {
	d, g := newCountDelta(), groupBumps{}
	d.events = a.events
	f, u, err := runChains(ctx, tx, a.chains, d, g) // chains.go
	if err != nil {
		return err
	}
	failed, unfailed := append(a.failed, f...), append(a.unfailed, u...)
	if err := propagateFailures(ctx, tx, a.now, failed, unfailed, d, g); err != nil {
		return err
	}
	// The refinished units' edges are resolved in tail, after their
	// dependents were blocked again above.
	onResolved(queueResolveFinished(tail, a.refinished, a.now.UnixNano()), a.refinished, &a.ready)
	d.queue(tail)
	g.queue(tail)
	return nil
}

// applyUpdates computes the transitions of a batch from the locked units,
// setting results[i] for each request that fails on its own, and queues
// the writes on out. It returns what must run after those writes.
func applyUpdates(ctx context.Context, tx dbtx, batch []*updateRequest, locked *lockedUnits, results []error, out *pgx.Batch) (*afterUpdates, error) {
	units := locked.byAddr
	ordered := locked.ordered
	d, g := newCountDelta(), groupBumps{}
	after := &afterUpdates{events: d.events}
	var chains []chainJob
	lastNow := map[*lockedUnit]time.Time{}
	for i, r := range batch {
		lu := units[r.unit()]
		if lu == nil {
			results[i] = missingUnitError(ctx, tx, r)
			continue
		}
		expireInGo(lu, r.now)
		if _, ok := lastNow[lu]; !ok && lu.dirty {
			lastNow[lu] = r.now
			if r.now.After(after.now) {
				after.now = r.now
			}
		}
		if r.leaseID != nil && (lu.st.Status != coordinate.StatusPending || lu.leaseID == nil || *lu.leaseID != *r.leaseID) {
			results[i] = fmt.Errorf("%w: %q/%q", coordinate.ErrLostLease, r.spec, r.key)
			continue
		}
		if r.onlyFailed && lu.st.Status != coordinate.StatusFailed {
			results[i] = errNotFailed
			continue
		}
		before, holder := lu.st.Status, lu.st.Worker
		st, eff, err := coordinate.ApplyUpdate(lu.st, r.upd, r.now)
		if err != nil {
			results[i] = fmt.Errorf("update_work_unit %q/%q: %w", r.spec, r.key, err)
			continue
		}
		st.Status = coordinate.StillWaiting(st.Status, lu.waits)
		if st.Status != coordinate.StatusPending {
			lu.leaseID = nil
		} else if before != coordinate.StatusPending {
			// Made pending by update_work_unit: no get_work attempt holds it.
			lu.leaseID = nil
		}
		lu.st = st
		lu.dirty = true
		if !eff.LeaseEnded.IsZero() && holder != nil {
			lu.lapsedBy, lu.lapsedAt = holder, eff.LeaseEnded
		}
		lastNow[lu] = r.now
		if r.now.After(after.now) {
			after.now = r.now
		}
		if eff.Completed {
			lu.completed = true
		}
		if eff.Chain && lu.then != "" {
			if cu := coordinate.ChainedUnits(st.Data, lu.priority); len(cu) > 0 {
				chains = append(chains, chainJob{ns: r.ns, from: lu, units: dedupeUnits(cu), now: r.now})
			}
		}
	}

	var (
		written, completed   rowKeys
		lapsed               rowKeys
		lapsedBy             [][]byte
		lapsedAt             []int64
		statuses             []int16
		datas, workers       [][]byte
		expiresCol, leaseIDs []*int64
		workerTexts          []*bool
		finished             []unitKey
		nows                 []int64
	)
	for _, lu := range ordered {
		if !lu.dirty {
			continue
		}
		d.transition(lu.specID, lu.stored, lu.st.Status, lu.expired)
		if lu.stored != lu.st.Status {
			now := lastNow[lu]
			g.bump(lu.nsID, lu.grp, now)
			ref := unitKey{lu.nsID, lu.specName.Bytes, lu.key}
			// Whether some unit depends on this one is read by later
			// statements, after the unit is locked: an edge added by a
			// transaction this one waited for is then visible.
			switch {
			case lu.st.Status == coordinate.StatusFinished && lu.stored == coordinate.StatusFailed:
				after.unfailed = append(after.unfailed, ref)
				after.refinished = append(after.refinished, ref)
			case lu.st.Status == coordinate.StatusFinished:
				finished = append(finished, ref)
			case lu.st.Status == coordinate.StatusFailed:
				after.failed = append(after.failed, ref)
			case lu.stored == coordinate.StatusFailed:
				after.unfailed = append(after.unfailed, ref)
			}
		}
		w, wt := nameCols(lu.st.Worker)
		written.add(lu.specID, []byte(lu.key))
		statuses = append(statuses, int16(lu.st.Status))
		datas = append(datas, []byte(lu.st.Data))
		expiresCol = append(expiresCol, nsOf(lu.st.Expiration))
		workers = append(workers, w)
		workerTexts = append(workerTexts, wt)
		leaseIDs = append(leaseIDs, lu.leaseID)
		nows = append(nows, lastNow[lu].UnixNano())
		if lu.completed && lu.st.Status.Completed() && lu.outstanding {
			completed.add(lu.specID, []byte(lu.key))
		}
		if lu.lapsedBy != nil && lu.outstanding && !lu.st.Status.Completed() {
			lapsed.add(lu.specID, []byte(lu.key))
			lapsedBy = append(lapsedBy, bytesOf(lu.lapsedBy.Bytes))
			lapsedAt = append(lapsedAt, lu.lapsedAt.UnixNano())
		}
	}
	if written.len() > 0 {
		out.Queue(writeUnitsSQL,
			written.specs, written.keys, statuses, datas, expiresCol, workers, workerTexts, leaseIDs, nows)
	}
	if lapsed.len() > 0 {
		out.Queue(workerUnitLapseSQL, lapsed.specs, lapsed.keys, lapsedBy, lapsedAt)
	}
	if completed.len() > 0 {
		out.Queue(unlistSQL, completed.specs, completed.keys)
	}
	onResolved(queueResolveFinished(out, finished, after.now.UnixNano()), finished, &after.ready)
	d.queue(out)
	g.queue(out)
	after.chains = chains
	return after, nil
}

// expireInGo applies lease expiry (coordinate.ExpireLease) to a locked
// unit whose lease ended before now but that no sweep has expired yet.
func expireInGo(lu *lockedUnit, now time.Time) {
	if lu.st.Status != coordinate.StatusPending || !coordinate.LeaseExpired(lu.st.Expiration, now) {
		return
	}
	lu.dirty = true
	lu.expired = true
	lu.leaseID = nil
	lu.lapsedBy, lu.lapsedAt = lu.st.Worker, lu.st.Expiration
	lu.st = coordinate.ExpireLease(lu.st, lu.attempts, lu.maxRetries, now)
	lu.st.Status = coordinate.StillWaiting(lu.st.Status, lu.waits)
	lu.completed = lu.completed || lu.st.Status.Completed()
}

// missingUnitError says whether the spec or the unit of r is missing.
func missingUnitError(ctx context.Context, tx dbtx, r *updateRequest) error {
	if r.leaseID != nil {
		return fmt.Errorf("%w: %q/%q no longer exists", coordinate.ErrLostLease, r.spec, r.key)
	}
	var id int64
	err := tx.QueryRow(ctx, specIDSQL, r.ns.id, bytesOf(r.spec)).Scan(&id)
	switch {
	case errNotFound(err):
		return fmt.Errorf("%w %q", coordinate.ErrNoSuchWorkSpec, r.spec)
	case err != nil:
		return fmt.Errorf("postgres update_work_unit %q/%q: %w", r.spec, r.key, err)
	}
	return fmt.Errorf("%w %q in %q", coordinate.ErrNoSuchWorkUnit, r.key, r.spec)
}
