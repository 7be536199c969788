package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// unitCols are the work_unit columns scanUnit reads, in order (alias u).
const unitCols = `u.key, u.key_text, u.data, u.status, u.priority, u.expires,
	u.worker, u.worker_text, u.not_before, u.attempts, u.grp,
	EXISTS (SELECT 1 FROM unit_dep e WHERE e.spec_id = u.spec_id AND e.key = u.key)`

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
	var id int64
	err := ns.b.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		id, err = ns.specID(ctx, tx, spec)
		if err != nil {
			return err
		}
		d, g := countDelta{}, groupBumps{}
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
	rows, err := ns.b.pool.Query(ctx, `SELECT status, sum(n)::bigint FROM (
			SELECT status, n FROM unit_count WHERE spec_id = $1
			UNION ALL SELECT status, n FROM archived_count WHERE spec_id = $1) c
		GROUP BY status`, id)
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
	sql := "SELECT " + unitCols + " FROM work_unit u WHERE u.spec_id = $1 AND u.key >= $2"
	args := []any{sr.id, bytesOf(query.Start)}
	if len(query.Statuses) > 0 {
		st := make([]int16, len(query.Statuses))
		for i, s := range query.Statuses {
			st[i] = int16(s)
		}
		args = append(args, st)
		sql += " AND u.status = ANY($3) ORDER BY u.priority DESC, u.key"
	} else {
		sql += " ORDER BY u.key"
	}
	if query.Limit > 0 {
		args = append(args, query.Limit)
		sql += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	rows, err := ns.b.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres list work units of %q: %w", spec, err)
	}
	urs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (unitRow, error) { return scanUnit(r, sr.spec.Name) })
	if err != nil {
		return nil, fmt.Errorf("postgres list work units of %q: %w", spec, err)
	}
	out := make([]*coordinate.WorkUnit, len(urs))
	for i := range urs {
		out[i] = &urs[i].unit
	}
	return out, ns.fillDependencies(ctx, sr.id, out, urs)
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
	rows, err := ns.b.pool.Query(ctx, "SELECT "+unitCols+" FROM work_unit u WHERE u.spec_id = $1 AND u.key = ANY($2)", sr.id, bk)
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

func (ns *namespace) PrioritizeWorkUnits(ctx context.Context, spec string, keys []string, priority *float64, adjustment float64) error {
	id, err := ns.specID(ctx, ns.b.pool, spec)
	if err != nil {
		return err
	}
	bk := make([][]byte, len(keys))
	for i, k := range keys {
		bk[i] = bytesOf(k)
	}
	_, err = ns.b.pool.Exec(ctx, `UPDATE work_unit SET priority = COALESCE($3::float8, priority + $4::float8)
		WHERE spec_id = $1 AND key = ANY($2)`, id, bk, priority, adjustment)
	if err != nil {
		return fmt.Errorf("postgres prioritize work units of %q: %w", spec, err)
	}
	return nil
}

func (ns *namespace) DeleteWorkUnits(ctx context.Context, spec string, query coordinate.DeleteQuery) (int, error) {
	if !query.All && query.Keys == nil && len(query.Statuses) == 0 {
		return 0, nil
	}
	if err := ns.b.expireLeases(ctx, ns.now()); err != nil {
		return 0, err
	}
	var deleted int
	err := ns.b.inTx(ctx, func(tx pgx.Tx) error {
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
			rows, err = tx.Query(ctx, `DELETE FROM work_unit WHERE spec_id = $1 RETURNING status, key`, id)
		case query.Keys != nil:
			bk := make([][]byte, len(query.Keys))
			for i, k := range query.Keys {
				bk[i] = bytesOf(k)
			}
			rows, err = tx.Query(ctx, `DELETE FROM work_unit WHERE spec_id = $1 AND key = ANY($2)
				AND (cardinality($3::smallint[]) = 0 OR status = ANY($3)) RETURNING status, key`, id, bk, st)
		default:
			rows, err = tx.Query(ctx, `DELETE FROM work_unit WHERE spec_id = $1 AND status = ANY($2) RETURNING status, key`, id, st)
		}
		if err != nil {
			return err
		}
		d := countDelta{}
		var status int16
		var key []byte
		var keys [][]byte
		if _, err := pgx.ForEachRow(rows, []any{&status, &key}, func() error {
			d.move(id, coordinate.Status(status), 0)
			keys = append(keys, key)
			deleted++
			return nil
		}); err != nil {
			return err
		}
		// Units waiting for a deleted unit fail.
		g := groupBumps{}
		if err := ns.failDependentsOfDeleted(ctx, tx, spec, keys, d, g); err != nil {
			return err
		}
		if err := g.apply(ctx, tx); err != nil {
			return err
		}
		if query.All || query.Keys == nil {
			// Archived counts of the statuses deleted go too, and count.
			var archived int64
			err := tx.QueryRow(ctx, `WITH del AS (
					DELETE FROM archived_count WHERE spec_id = $1 AND ($2 OR status = ANY($3)) RETURNING n)
				SELECT COALESCE(sum(n), 0)::bigint FROM del`, id, query.All, st).Scan(&archived)
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
		rows, err := tx.Query(ctx, `WITH ranked AS (
				SELECT u.spec_id, u.key, u.status, u.expires,
					row_number() OVER (PARTITION BY u.spec_id, u.status ORDER BY u.expires DESC, u.key) AS rn
				FROM work_unit u JOIN work_spec s ON s.id = u.spec_id
				WHERE s.namespace_id = $1 AND (cardinality($2::bytea[]) = 0 OR s.name = ANY($2))
					AND u.status IN (4, 5)
			), del AS (
				DELETE FROM work_unit u USING ranked r
				WHERE u.spec_id = r.spec_id AND u.key = r.key AND (r.rn > $3 OR r.expires < $4)
				RETURNING u.spec_id, u.status
			)
			SELECT spec_id, status, count(*) FROM del GROUP BY spec_id, status`,
			ns.id, bn, maxCount, cutoff)
		if err != nil {
			return err
		}
		d := countDelta{}
		var specIDs []int64
		var statuses []int16
		var counts []int64
		var spec int64
		var status int16
		var n int64
		if _, err := pgx.ForEachRow(rows, []any{&spec, &status, &n}, func() error {
			d[countKey{spec, coordinate.Status(status)}] -= n
			specIDs = append(specIDs, spec)
			statuses = append(statuses, status)
			counts = append(counts, n)
			return nil
		}); err != nil {
			return err
		}
		if len(specIDs) > 0 {
			_, err := tx.Exec(ctx, `INSERT INTO archived_count (spec_id, status, n)
				SELECT * FROM unnest($1::bigint[], $2::smallint[], $3::bigint[])
				ON CONFLICT (spec_id, status) DO UPDATE SET n = archived_count.n + EXCLUDED.n`,
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

// failDependentsOfDeleted fails the units that depended on deleted units
// of spec (all of the spec's units when keys is nil).
func (ns *namespace) failDependentsOfDeleted(ctx context.Context, tx dbtx, spec string, keys [][]byte, d countDelta, g groupBumps) error {
	rows, err := tx.Query(ctx, `SELECT DISTINCT dep_key FROM unit_dep
		WHERE namespace_id = $1 AND dep_spec = $2 AND ($3::bytea[] IS NULL OR dep_key = ANY($3))`,
		ns.id, bytesOf(spec), keys)
	if err != nil {
		return err
	}
	var failed []unitKey
	var key []byte
	if _, err := pgx.ForEachRow(rows, []any{&key}, func() error {
		failed = append(failed, unitKey{ns.id, spec, string(key)})
		return nil
	}); err != nil {
		return err
	}
	if len(failed) == 0 {
		return nil
	}
	return propagateFailures(ctx, tx, ns.now(), failed, nil, d, g)
}
