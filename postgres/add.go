package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// The statements, from sql/add.sql.
var (
	unitsInsertNewSQL    = namedSQL("units_insert_new")
	unitsLockExistingSQL = namedSQL("units_lock_existing")
	depsTargetsSQL       = namedSQL("deps_targets")
	unitsInsertSQL       = namedSQL("units_insert")
	unitsReplaceSQL      = namedSQL("units_replace")
	depsDropSQL          = namedSQL("deps_drop")
	depsAddSQL           = namedSQL("deps_add")
)

// existingUnit is what addUnits reads of a unit being re-added.
type existingUnit struct {
	status    coordinate.Status
	grp       []byte
	notBefore *int64
}

// addedUnit is the row addUnits writes for one input.
type addedUnit struct {
	in        *coordinate.WorkUnitInput
	old       *existingUnit // nil: new unit
	status    coordinate.Status
	data      []byte
	expires   *int64
	clear     bool // clear worker and lease (the unit is not pending)
	depFailed bool
	edges     []coordinate.UnitRef // replace the unit's edges with these
	setEdges  bool
	// group is the unit's group after the add: the item's, or, when it
	// names none, the one the unit had (as in the memory backend).
	group string
}

// addUnits adds or re-adds deduplicated units to spec (of namespace nsID,
// named specName) inside tx, following SEMANTICS §5.5 / DECISIONS §4 and
// the dependency rules: a PENDING unit keeps its lease and edges; a unit
// given dependencies is BLOCKED on the unfinished ones (FAILED at once if
// one has failed); a BLOCKED unit re-added without dependencies stays
// blocked; anything else becomes AVAILABLE. It records count and group
// changes in d and g and returns the units that became FAILED and those
// that stopped being FAILED, for propagateFailures. It fails with
// coordinate.ErrCycle, having changed nothing, when an edge would close a
// cycle.
func addUnits(ctx context.Context, tx dbtx, nsID, spec int64, specName string, units []coordinate.WorkUnitInput,
	now time.Time, d countDelta, g groupBumps) (failed, unfailed []unitKey, err error) {
	if len(units) == 0 {
		return nil, nil, nil
	}
	for i := range units {
		if len(units[i].DependsOn) > 0 {
			return addOrUpdateUnits(ctx, tx, nsID, spec, specName, units, now, d, g, false)
		}
	}
	// Without dependencies, new units need no reading first: insert them
	// all, and take the slow path only for the keys that exist already.
	rest, err := insertIfNew(ctx, tx, nsID, spec, units, now, d, g)
	if err != nil || len(rest) == 0 {
		return nil, nil, err
	}
	return addOrUpdateUnits(ctx, tx, nsID, spec, specName, rest, now, d, g, false)
}

// insertIfNew inserts the units whose keys do not exist yet as AVAILABLE
// and returns the others.
func insertIfNew(ctx context.Context, tx dbtx, nsID, spec int64, units []coordinate.WorkUnitInput,
	now time.Time, d countDelta, g groupBumps) ([]coordinate.WorkUnitInput, error) {
	keys, datas, grps := make([][]byte, len(units)), make([][]byte, len(units)), make([][]byte, len(units))
	texts := make([]bool, len(units))
	prios := make([]float64, len(units))
	nbs := make([]*int64, len(units))
	for i := range units {
		in := &units[i]
		keys[i] = bytesOf(in.Key.Bytes)
		texts[i] = in.Key.Text
		datas[i] = in.Data
		if len(in.Data) == 0 {
			datas[i] = coordinate.Null
		}
		if in.Priority != nil {
			prios[i] = *in.Priority
		}
		nbs[i] = notBefore(in, now)
		grps[i] = groupCol(in.Group)
	}
	rows, err := tx.Query(ctx, unitsInsertNewSQL, spec, keys, texts, datas, prios, nbs, grps, now.UnixNano())
	if err != nil {
		return nil, err
	}
	inserted := make(map[string]bool, len(units))
	var key []byte
	if _, err := pgx.ForEachRow(rows, []any{&key}, func() error {
		inserted[string(key)] = true
		return nil
	}); err != nil {
		return nil, err
	}
	var rest []coordinate.WorkUnitInput
	for i := range units {
		in := &units[i]
		if !inserted[in.Key.Bytes] {
			rest = append(rest, *in)
			continue
		}
		d.move(spec, 0, coordinate.StatusAvailable)
		g.bump(nsID, []byte(in.Group), now)
	}
	return rest, nil
}

// addOrUpdateUnits is addUnits reading the existing units first. The
// items take effect in order, as in the memory backend: an item depending
// on another item of the call sees that one's new status when it comes
// later. When a status change an item makes would spread to the units
// waiting on it (failing them, or blocking again those failed because of
// it) and a later item could be one of them or depend on one, the items
// are applied one at a time instead (addOneByOne). cycleChecked says the
// spreadsToLaterItem reports whether an item's status change would
// spread to the units waiting on it (a unit newly FAILED fails them; one
// no longer FAILED blocks again those failed because of it) while a later
// item of the call could be one of those units (an existing unit that
// may have edges: BLOCKED, PENDING or FAILED) or depend on one (an item
// with dependencies). Applied together, that later item would be decided
// on the statuses before the spreading, where the memory backend, which
// spreads each change at once, decides it after.
func spreadsToLaterItem(out []addedUnit) bool {
	spread := false
	for i := range out {
		a := &out[i]
		if spread && (len(a.in.DependsOn) > 0 || a.old != nil && mayHaveEdges(a.old.status)) {
			return true
		}
		wasFailed := a.old != nil && a.old.status == coordinate.StatusFailed
		spread = spread || wasFailed != (a.status == coordinate.StatusFailed)
	}
	return false
}

// mayHaveEdges reports whether a unit in status st may wait on others:
// BLOCKED ones do, a hand-leased BLOCKED unit is PENDING with its edges,
// and a unit failed because of a dependency keeps its edges.
func mayHaveEdges(st coordinate.Status) bool {
	return st == coordinate.StatusBlocked || st == coordinate.StatusPending || st == coordinate.StatusFailed
}

// addOneByOne applies the items of one call one at a time, in order, each
// change spread to the units waiting on it before the next item is
// decided, as the memory backend does. The call's edges have passed the
// cycle check as a whole (the memory backend checks them so too). Rare
// (spreadsToLaterItem) and a few round trips an item.
func addOneByOne(ctx context.Context, tx dbtx, nsID, spec int64, specName string, units []coordinate.WorkUnitInput,
	now time.Time, d countDelta, g groupBumps) error {
	for i := range units {
		failed, unfailed, err := addOrUpdateUnits(ctx, tx, nsID, spec, specName, units[i:i+1], now, d, g, true)
		if err != nil {
			return err
		}
		if err := propagateFailures(ctx, tx, now, failed, unfailed, d, g); err != nil {
			return err
		}
	}
	return nil
}

// call's edges passed the cycle check already.
func addOrUpdateUnits(ctx context.Context, tx dbtx, nsID, spec int64, specName string, units []coordinate.WorkUnitInput,
	now time.Time, d countDelta, g groupBumps, cycleChecked bool) (failed, unfailed []unitKey, err error) {
	keys := make([][]byte, len(units))
	for i, u := range units {
		keys[i] = bytesOf(u.Key.Bytes)
	}
	rows, err := tx.Query(ctx, unitsLockExistingSQL, spec, keys)
	if err != nil {
		return nil, nil, err
	}
	existing := map[string]*existingUnit{}
	var (
		key    []byte
		status int16
		grp    []byte
		nb     *int64
	)
	if _, err := pgx.ForEachRow(rows, []any{&key, &status, &grp, &nb}, func() error {
		existing[string(key)] = &existingUnit{status: coordinate.Status(status), grp: grp, notBefore: nb}
		return nil
	}); err != nil {
		return nil, nil, err
	}

	// Dependencies: the cycle check and the state of each unit depended on.
	// The cycle check replaces the edges of every unit whose edges the add
	// replaces: those given dependencies, and those re-added without any
	// that become AVAILABLE (a FAILED unit drops the edge to the failed
	// dependency). A PENDING unit, and a BLOCKED one re-added without
	// dependencies, keep their stored edges.
	withDeps := map[coordinate.UnitRef][]coordinate.UnitRef{}
	cycleBatch := map[coordinate.UnitRef][]coordinate.UnitRef{}
	var cycleOrder []coordinate.UnitRef // input order, as the memory backend's
	for i := range units {
		in := &units[i]
		old := existing[in.Key.Bytes]
		if old != nil && old.status == coordinate.StatusPending {
			continue
		}
		self := coordinate.UnitRef{Spec: specName, Key: in.Key.Bytes}
		if len(in.DependsOn) == 0 {
			if old != nil && old.status != coordinate.StatusBlocked {
				cycleBatch[self] = nil
				cycleOrder = append(cycleOrder, self)
			}
			continue
		}
		var deps []coordinate.UnitRef
		seen := map[coordinate.UnitRef]bool{}
		for _, r := range in.DependsOn {
			if !seen[r] {
				seen[r] = true
				deps = append(deps, r)
			}
		}
		withDeps[self] = deps
		cycleBatch[self] = deps
		cycleOrder = append(cycleOrder, self)
	}
	depStatus := map[coordinate.UnitRef]coordinate.Status{}
	if len(withDeps) > 0 {
		// Only new edges close a cycle: without any, nothing to check.
		if !cycleChecked {
			if err := checkCycles(ctx, tx, nsID, cycleBatch, cycleOrder); err != nil {
				return nil, nil, err
			}
		}
		var specs, dkeys [][]byte
		for _, deps := range withDeps {
			for _, r := range deps {
				specs = append(specs, bytesOf(r.Spec))
				dkeys = append(dkeys, bytesOf(r.Key))
			}
		}
		// Locking the units depended on orders this transaction with one
		// finishing or failing them: either it reads their final status
		// here, or that transaction waits for this one and then sees the
		// edges this one adds (update.go, finish.go).
		rows, err := tx.Query(ctx, depsTargetsSQL, nsID, specs, dkeys)
		if err != nil {
			return nil, nil, err
		}
		var sname []byte
		if _, err := pgx.ForEachRow(rows, []any{&sname, &key, &status}, func() error {
			depStatus[coordinate.UnitRef{Spec: string(sname), Key: string(key)}] = coordinate.Status(status)
			return nil
		}); err != nil {
			return nil, nil, err
		}
	}

	nowNS := now.UnixNano()
	out := make([]addedUnit, len(units))
	for i := range units {
		in := &units[i]
		a := &out[i]
		a.in = in
		a.old = existing[in.Key.Bytes]
		a.group = in.Group
		if a.group == "" && a.old != nil {
			a.group = string(a.old.grp) // re-adding without a group keeps the old one
		}
		a.data = in.Data
		if len(a.data) == 0 {
			a.data = coordinate.Null
		}
		self := coordinate.UnitRef{Spec: specName, Key: in.Key.Bytes}
		deps, hasDeps := withDeps[self]
		switch {
		case a.old != nil && a.old.status == coordinate.StatusPending:
			a.status = coordinate.StatusPending // keeps its lease (DECISIONS §4)
		case hasDeps:
			a.clear, a.setEdges = true, true
			var failedDep *coordinate.UnitRef
			for _, r := range deps {
				st := depStatus[r]
				if st == coordinate.StatusFinished {
					continue
				}
				a.edges = append(a.edges, r)
				if st == coordinate.StatusFailed && failedDep == nil {
					failedDep = &r
				}
			}
			switch {
			case len(a.edges) == 0:
				a.status = coordinate.StatusAvailable
			case failedDep != nil:
				a.status = coordinate.StatusFailed
				a.data = coordinate.WithTraceback(a.data, coordinate.DependencyFailedTraceback(*failedDep))
				a.depFailed = true
				a.expires = &nowNS
			default:
				a.status = coordinate.StatusBlocked
			}
		case a.old != nil && a.old.status == coordinate.StatusBlocked:
			a.status = coordinate.StatusBlocked // still waiting for its dependencies
		default:
			a.status = coordinate.StatusAvailable
			a.clear, a.setEdges = true, a.old != nil
		}
		// Later items depending on this one see its new status.
		depStatus[self] = a.status
	}
	if len(units) > 1 && spreadsToLaterItem(out) {
		return nil, nil, addOneByOne(ctx, tx, nsID, spec, specName, units, now, d, g)
	}

	for i := range out {
		a := &out[i]
		in := a.in
		var oldStatus coordinate.Status
		var oldGrp []byte
		if a.old != nil {
			oldStatus, oldGrp = a.old.status, a.old.grp
		}
		d.move(spec, oldStatus, a.status)
		if a.old != nil && oldStatus == coordinate.StatusAvailable && a.old.notBefore != nil && *a.old.notBefore <= nowNS {
			// The end of the unit's delay was progress of its group,
			// which GroupStatus derived from the delay the add replaces:
			// record it (the memory backend recorded it as it happened).
			g.bump(nsID, oldGrp, time.Unix(0, *a.old.notBefore))
		}
		if oldStatus != a.status || string(oldGrp) != a.group {
			g.bump(nsID, []byte(a.group), now)
			if string(oldGrp) != a.group {
				g.bump(nsID, oldGrp, now)
			}
		}
		ref := unitKey{nsID, specName, in.Key.Bytes}
		if a.status == coordinate.StatusFailed && oldStatus != coordinate.StatusFailed {
			failed = append(failed, ref)
		}
		if oldStatus == coordinate.StatusFailed && a.status != coordinate.StatusFailed {
			unfailed = append(unfailed, ref)
		}
	}

	if err := insertNewUnits(ctx, tx, spec, out, now); err != nil {
		return nil, nil, err
	}
	if err := updateExistingUnits(ctx, tx, spec, out, now); err != nil {
		return nil, nil, err
	}
	if err := replaceEdges(ctx, tx, nsID, spec, out); err != nil {
		return nil, nil, err
	}
	return failed, unfailed, nil
}

func notBefore(in *coordinate.WorkUnitInput, now time.Time) *int64 {
	if in.Delay > 0 {
		return nsOf(now.Add(in.Delay))
	}
	return nil
}

func groupCol(g string) []byte {
	if g == "" {
		return nil
	}
	return []byte(g)
}

// insertNewUnits inserts the new units of out.
func insertNewUnits(ctx context.Context, tx dbtx, spec int64, out []addedUnit, now time.Time) error {
	var (
		keys, datas, grps [][]byte
		texts, depFailed  []bool
		statuses          []int16
		prios             []float64
		nbs, expires      []*int64
	)
	for i := range out {
		a := &out[i]
		if a.old != nil {
			continue
		}
		keys = append(keys, bytesOf(a.in.Key.Bytes))
		texts = append(texts, a.in.Key.Text)
		datas = append(datas, a.data)
		statuses = append(statuses, int16(a.status))
		p := 0.0
		if a.in.Priority != nil {
			p = *a.in.Priority
		}
		prios = append(prios, p)
		nbs = append(nbs, notBefore(a.in, now))
		expires = append(expires, a.expires)
		depFailed = append(depFailed, a.depFailed)
		grps = append(grps, groupCol(a.group))
	}
	if len(keys) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, unitsInsertSQL,
		spec, keys, texts, datas, statuses, prios, nbs, expires, depFailed, grps, now.UnixNano())
	return err
}

// updateExistingUnits rewrites the re-added units of out.
func updateExistingUnits(ctx context.Context, tx dbtx, spec int64, out []addedUnit, now time.Time) error {
	var (
		ukeys, datas, grps      [][]byte
		statuses                []int16
		prios                   []float64
		hasPrio, clr, depFailed []bool
		nbs, expires            []*int64
	)
	for i := range out {
		a := &out[i]
		if a.old == nil {
			continue
		}
		ukeys = append(ukeys, bytesOf(a.in.Key.Bytes))
		datas = append(datas, a.data)
		statuses = append(statuses, int16(a.status))
		p := 0.0
		if a.in.Priority != nil {
			p = *a.in.Priority
		}
		prios = append(prios, p)
		hasPrio = append(hasPrio, a.in.Priority != nil)
		nbs = append(nbs, notBefore(a.in, now))
		clr = append(clr, a.clear)
		expires = append(expires, a.expires)
		depFailed = append(depFailed, a.depFailed)
		grps = append(grps, groupCol(a.group))
	}
	if len(ukeys) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, unitsReplaceSQL,
		ukeys, datas, statuses, prios, hasPrio, nbs, clr, expires, depFailed, grps, spec, now.UnixNano())
	return err
}

// replaceEdges replaces the dependency edges of the units of out that set
// them (dropping the old ones of units made available).
func replaceEdges(ctx context.Context, tx dbtx, nsID, spec int64, out []addedUnit) error {
	var (
		drop                [][]byte
		eunits, especs, eks [][]byte
		eseq                []int32
	)
	for i := range out {
		a := &out[i]
		if !a.setEdges {
			continue
		}
		key := bytesOf(a.in.Key.Bytes)
		if a.old != nil {
			drop = append(drop, key)
		}
		for j, r := range a.edges {
			eunits = append(eunits, key)
			especs = append(especs, bytesOf(r.Spec))
			eks = append(eks, bytesOf(r.Key))
			eseq = append(eseq, int32(j))
		}
	}
	if len(drop) > 0 {
		if _, err := tx.Exec(ctx, depsDropSQL, spec, drop); err != nil {
			return err
		}
	}
	if len(eunits) > 0 {
		if _, err := tx.Exec(ctx, depsAddSQL,
			spec, nsID, eunits, especs, eks, eseq); err != nil {
			return err
		}
	}
	return nil
}
