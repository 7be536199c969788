package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// The statements, from sql/units.sql.
var (
	unitsByKeySQL          = namedSQL("units_by_key")
	unitsByStatusSQL       = namedSQL("units_by_status")
	unitsByStatusKeySQL    = namedSQL("units_by_status_key")
	unitsGetSQL            = namedSQL("units_get")
	unitsCountSQL          = namedSQL("units_count")
	unitsPrioritizeSQL     = namedSQL("units_prioritize")
	unitsDeleteAllSQL      = namedSQL("units_delete_all")
	unitsDeleteKeysSQL     = namedSQL("units_delete_keys")
	unitsDeleteStatusesSQL = namedSQL("units_delete_statuses")
	archivedDeleteSQL      = namedSQL("archived_delete")
	unitsArchiveSQL        = namedSQL("units_archive")
	archivedAddSQL         = namedSQL("archived_add")
)

// unitRow is one work_unit row.
type unitRow struct {
	unit    coordinate.WorkUnit
	hasDeps bool
}

func scanUnit(r pgx.Row, spec coordinate.Name) (unitRow, error) {
	var (
		ur                 unitRow
		key, data, worker  []byte
		grp                []byte
		keyText            bool
		workerText         *bool
		status             int16
		expires, notBefore *int64
		attempts           int32
	)
	err := r.Scan(&key, &keyText, &data, &status, &ur.unit.Priority, &expires,
		&worker, &workerText, &notBefore, &attempts, &grp, &ur.hasDeps)
	if err != nil {
		return ur, err
	}
	u := &ur.unit
	u.Spec = spec
	u.Key = coordinate.Name{Bytes: string(key), Text: keyText}
	u.Data = coordinate.Data(data)
	u.Status = coordinate.Status(status)
	u.Expiration = timeOf(expires)
	u.Worker = nameOf(worker, workerText)
	u.NotBefore = timeOf(notBefore)
	u.Attempts = int(attempts)
	u.Group = string(grp)
	return ur, nil
}

// dedupeUnits keeps the last item for each key, in first-seen order.
func dedupeUnits(units []coordinate.WorkUnitInput) []coordinate.WorkUnitInput {
	last := make(map[string]int, len(units))
	for i, u := range units {
		last[u.Key.Bytes] = i
	}
	if len(last) == len(units) {
		return units
	}
	out := make([]coordinate.WorkUnitInput, 0, len(last))
	for i, u := range units {
		if last[u.Key.Bytes] == i {
			out = append(out, u)
		}
	}
	return out
}

func (ns *namespace) AddWorkUnits(ctx context.Context, spec string, units []coordinate.WorkUnitInput) error {
	units = dedupeUnits(units)
	now := ns.now()
	// A re-added unit whose lease lapsed is re-added as what the lapse
	// made it (AVAILABLE, or FAILED past max_retries), not as PENDING.
	if err := ns.b.expireLeases(ctx, now); err != nil {
		return err
	}
	var id int64
	err := ns.b.inTxCounted(ctx, func(tx pgx.Tx, d countDelta) error {
		var err error
		id, err = ns.specID(ctx, tx, spec)
		if err != nil {
			return err
		}
		g := groupBumps{}
		failed, unfailed, err := addUnits(ctx, tx, ns.id, id, spec, units, now, d, g)
		if err != nil {
			if errors.Is(err, coordinate.ErrCycle) {
				return err
			}
			return fmt.Errorf("postgres add work units to %q: %w", spec, err)
		}
		if err := propagateFailures(ctx, tx, now, failed, unfailed, d, g); err != nil {
			return err
		}
		if err := d.apply(ctx, tx); err != nil {
			return err
		}
		return g.apply(ctx, tx)
	})
	if err == nil {
		ns.b.cache.added(id, len(units))
	}
	return err
}

func (ns *namespace) CountWorkUnits(ctx context.Context, spec string) (map[coordinate.Status]int, error) {
	if err := ns.b.expireLeases(ctx, ns.now()); err != nil {
		return nil, err
	}
	id, err := ns.specID(ctx, ns.b.pool, spec)
	if err != nil {
		return nil, err
	}
	rows, err := ns.b.pool.Query(ctx, unitsCountSQL, id)
	if err != nil {
		return nil, fmt.Errorf("postgres count work units of %q: %w", spec, err)
	}
	out := map[coordinate.Status]int{}
	var status int16
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error {
		if n != 0 {
			out[coordinate.Status(status)] = int(n)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("postgres count work units of %q: %w", spec, err)
	}
	return out, nil
}

func (ns *namespace) ListWorkUnits(ctx context.Context, spec string, query coordinate.WorkUnitQuery) ([]*coordinate.WorkUnit, error) {
	if err := ns.b.expireLeases(ctx, ns.now()); err != nil {
		return nil, err
	}
	sr, err := ns.lookupSpec(ctx, ns.b.pool, spec, false)
	if err != nil {
		return nil, err
	}
	var limit *int64
	if query.Limit > 0 {
		n := int64(query.Limit)
		limit = &n
	}
	sql, args := unitsByKeySQL, []any{sr.id, bytesOf(query.Start), limit}
	if len(query.Statuses) > 0 {
		st := make([]int16, len(query.Statuses))
		for i, s := range query.Statuses {
			st[i] = int16(s)
		}
		sql, args = unitsByStatusSQL, append(args, st)
		if query.KeyOrder {
			sql = unitsByStatusKeySQL
		}
	}
	rows, err := ns.b.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres list work units of %q: %w", spec, err)
	}
	urs, err := collectUnitsWithin(rows, sr.spec.Name, query.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("postgres list work units of %q: %w", spec, err)
	}
	out := make([]*coordinate.WorkUnit, len(urs))
	for i := range urs {
		out[i] = &urs[i].unit
	}
	return out, ns.fillDependencies(ctx, sr.id, out, urs)
}

// collectUnitsWithin reads units in the rows' order until their data
// would pass maxBytes (coordinate.WithinBytes), then closes the rows: the
// rest stream past on the connection without being kept, so a page of
// large units costs one unit past the budget, not the whole page.
func collectUnitsWithin(rows pgx.Rows, spec coordinate.Name, maxBytes int64) ([]unitRow, error) {
	defer rows.Close()
	var (
		urs  []unitRow
		used int64
	)
	for rows.Next() {
		ur, err := scanUnit(rows, spec)
		if err != nil {
			return nil, err
		}
		size := int64(len(ur.unit.Data))
		if !coordinate.WithinBytes(used, size, maxBytes, len(urs) == 0) {
			break
		}
		used += size
		urs = append(urs, ur)
	}
	rows.Close()
	return urs, rows.Err()
}

func (ns *namespace) GetWorkUnits(ctx context.Context, spec string, keys []string) ([]*coordinate.WorkUnit, error) {
	if err := ns.b.expireLeases(ctx, ns.now()); err != nil {
		return nil, err
	}
	sr, err := ns.lookupSpec(ctx, ns.b.pool, spec, false)
	if err != nil {
		return nil, err
	}
	bk := make([][]byte, len(keys))
	for i, k := range keys {
		bk[i] = bytesOf(k)
	}
	rows, err := ns.b.pool.Query(ctx, unitsGetSQL, sr.id, bk)
	if err != nil {
		return nil, fmt.Errorf("postgres get work units of %q: %w", spec, err)
	}
	urs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (unitRow, error) { return scanUnit(r, sr.spec.Name) })
	if err != nil {
		return nil, fmt.Errorf("postgres get work units of %q: %w", spec, err)
	}
	found := make([]*coordinate.WorkUnit, len(urs))
	byKey := make(map[string]*coordinate.WorkUnit, len(urs))
	for i := range urs {
		found[i] = &urs[i].unit
		byKey[urs[i].unit.Key.Bytes] = &urs[i].unit
	}
	if err := ns.fillDependencies(ctx, sr.id, found, urs); err != nil {
		return nil, err
	}
	out := make([]*coordinate.WorkUnit, len(keys))
	for i, k := range keys {
		if u, ok := byKey[k]; ok {
			c := *u
			out[i] = &c
		}
	}
	return out, nil
}

func (ns *namespace) PrioritizeWorkUnits(ctx context.Context, spec string, keys []string, priority *float64, adjustment float64) (int, error) {
	id, err := ns.specID(ctx, ns.b.pool, spec)
	if err != nil {
		return 0, err
	}
	bk := make([][]byte, len(keys))
	for i, k := range keys {
		bk[i] = bytesOf(k)
	}
	// A transaction of its own so a deadlock is rerun: the statement
	// locks the units and then the spec's row (widening its priority
	// bounds), an add_work_units that widens them the other way round.
	var changed int64
	err = ns.b.inTx(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, unitsPrioritizeSQL, id, bk, priority, adjustment).Scan(nil, &changed)
	})
	if err != nil {
		return 0, fmt.Errorf("postgres prioritize work units of %q: %w", spec, err)
	}
	return int(changed), nil
}

func (ns *namespace) DeleteWorkUnits(ctx context.Context, spec string, query coordinate.DeleteQuery) (int, error) {
	if !query.All && query.Keys == nil && len(query.Statuses) == 0 {
		// Deletes nothing, but an unknown spec is still reported (as the
		// memory backend does; del_work_units answers "no such work_spec").
		_, err := ns.specID(ctx, ns.b.pool, spec)
		return 0, err
	}
	now := ns.now()
	if err := ns.b.expireLeases(ctx, now); err != nil {
		return 0, err
	}
	var deleted int
	err := ns.b.inTxCounted(ctx, func(tx pgx.Tx, d countDelta) error {
		deleted = 0
		id, err := ns.specID(ctx, tx, spec)
		if err != nil {
			return err
		}
		st := make([]int16, len(query.Statuses))
		for i, s := range query.Statuses {
			st[i] = int16(s)
		}
		var rows pgx.Rows
		switch {
		case query.All:
			rows, err = tx.Query(ctx, unitsDeleteAllSQL, id)
		case query.Keys != nil:
			bk := make([][]byte, len(query.Keys))
			for i, k := range query.Keys {
				bk[i] = bytesOf(k)
			}
			rows, err = tx.Query(ctx, unitsDeleteKeysSQL, id, bk, st)
		default:
			rows, err = tx.Query(ctx, unitsDeleteStatusesSQL, id, st)
		}
		if err != nil {
			return err
		}
		var status int16
		var key, grp []byte
		var keys [][]byte
		g := groupBumps{}
		if _, err := pgx.ForEachRow(rows, []any{&status, &key, &grp}, func() error {
			d.move(id, coordinate.Status(status), 0)
			keys = append(keys, key)
			g.bump(ns.id, grp, now) // a member deleted is its group's progress
			deleted++
			return nil
		}); err != nil {
			return err
		}
		// Units waiting for a deleted unit fail.
		if err := ns.failDependentsOfDeleted(ctx, tx, ns.unitKeys(spec, keys, nil), d, g); err != nil {
			return err
		}
		if err := g.apply(ctx, tx); err != nil {
			return err
		}
		if query.All || query.Keys == nil {
			// Archived counts of the statuses deleted go too, and count.
			var archived int64
			err := tx.QueryRow(ctx, archivedDeleteSQL, id, query.All, st).Scan(&archived)
			if err != nil {
				return err
			}
			deleted += int(archived)
		}
		return d.apply(ctx, tx)
	})
	if err != nil {
		return 0, fmt.Errorf("postgres delete work units of %q: %w", spec, err)
	}
	return deleted, nil
}

// Archive applies the retention policy to the finished and failed units of
// the named specs (all when names is empty): per spec and status, units
// beyond the newest MaxCount and units completed more than MaxAge ago are
// dropped and added to the archived counts.
func (ns *namespace) Archive(ctx context.Context, names []string, policy coordinate.RetentionPolicy) error {
	if policy.MaxCount < 0 && policy.MaxAge <= 0 {
		return nil
	}
	now := ns.now()
	if err := ns.b.expireLeases(ctx, now); err != nil {
		return err
	}
	bn := make([][]byte, len(names))
	for i, n := range names {
		bn[i] = bytesOf(n)
	}
	cutoff := int64(-1 << 63)
	if policy.MaxAge > 0 {
		cutoff = now.Add(-policy.MaxAge).UnixNano()
	}
	maxCount := int64(policy.MaxCount)
	if policy.MaxCount < 0 {
		maxCount = 1 << 62
	}
	err := ns.b.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, unitsArchiveSQL,
			ns.id, bn, maxCount, cutoff)
		if err != nil {
			return err
		}
		d := newCountDelta()
		var specIDs []int64
		var statuses []int16
		var counts []int64
		var spec int64
		var status int16
		var n int64
		var name []byte
		var waited, groups [][]byte
		var deleted []unitKey // archived units some unit waits for
		g := groupBumps{}
		if _, err := pgx.ForEachRow(rows, []any{&spec, &status, &n, &name, &waited, &groups}, func() error {
			d.cells[countKey{spec, coordinate.Status(status)}] -= n
			specIDs = append(specIDs, spec)
			statuses = append(statuses, status)
			counts = append(counts, n)
			deleted = ns.unitKeys(string(name), waited, deleted)
			for _, grp := range groups {
				g.bump(ns.id, grp, now) // a member archived is its group's progress
			}
			return nil
		}); err != nil {
			return err
		}
		if err := ns.failDependentsOfDeleted(ctx, tx, deleted, d, g); err != nil {
			return err
		}
		if err := g.apply(ctx, tx); err != nil {
			return err
		}
		if len(specIDs) > 0 {
			_, err := tx.Exec(ctx, archivedAddSQL,
				specIDs, statuses, counts)
			if err != nil {
				return err
			}
		}
		return d.apply(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("postgres archive: %w", err)
	}
	return nil
}

// failDependentsOfDeleted fails the units that depended on the deleted
// units, transitively. Those must be units that existed, so a unit
// waiting for a key never added goes on waiting: the callers take them
// from the deletion, or, for a spec, read them before it. The cascade's
// first round trip finds which of them some unit waited for.
func (ns *namespace) failDependentsOfDeleted(ctx context.Context, tx dbtx, deleted []unitKey, d countDelta, g groupBumps) error {
	return propagateFailures(ctx, tx, ns.now(), deleted, nil, d, g)
}

// unitKeys appends to into the units of spec with keys.
func (ns *namespace) unitKeys(spec string, keys [][]byte, into []unitKey) []unitKey {
	for _, k := range keys {
		into = append(into, unitKey{ns.id, spec, string(k)})
	}
	return into
}
