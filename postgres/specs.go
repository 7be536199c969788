package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/coordinated/coordinated/coordinate"
)

// The statements, from sql/specs.sql.
var (
	specGetSQL          = namedSQL("spec_get")
	specGetForUpdateSQL = namedSQL("spec_get_for_update")
	specsListSQL        = namedSQL("specs_list")
	specSetSQL          = namedSQL("spec_set")
	specIDSQL           = namedSQL("spec_id")
	specControlSQL      = namedSQL("spec_control")
	specDeleteSQL       = namedSQL("spec_delete")
	specUnitGroupsSQL   = namedSQL("spec_unit_groups")
	depsOnSpecUnitsSQL  = namedSQL("deps_on_spec_units")
	specsClearSQL       = namedSQL("specs_clear")
)

// specRow is one work_spec row.
type specRow struct {
	id   int64
	spec coordinate.WorkSpec
}

func scanSpec(r pgx.Row) (specRow, error) { return scanSpecWith(r) }

// scanSpecWith is scanSpec for rows that carry extra columns after
// the spec columns (spec_cols, sql/specs.sql), scanned into extra.
func scanSpecWith(r pgx.Row, extra ...any) (specRow, error) {
	var c specColumns
	if err := r.Scan(append(c.dest(), extra...)...); err != nil {
		return specRow{}, err
	}
	return c.row(), nil
}

// specColumns receives the spec columns (spec_cols, sql/specs.sql) as
// scanned, in their order, and makes the specRow of them: for a row's
// columns (scanSpecWith) and for the record of them candidates.sql
// returns (specRecord, specrows.go).
type specColumns struct {
	sr               specRow
	name, def        []byte
	then, runtime    []byte
	intervalNS       int64
	nextContinuous   *int64
	nameText         bool
	pri, wt, mr, mg  int32
	maxRetries       int32
	paused, cont, cb bool
	tp               bool
	minGB            float64
	controlled       int16
}

// dest is the scan targets of the spec columns, in order.
func (c *specColumns) dest() []any {
	return []any{&c.sr.id, &c.name, &c.nameText, &c.def, &c.pri, &c.wt, &c.paused, &c.cont, &c.cb, &c.intervalNS,
		&c.nextContinuous, &c.mr, &c.mg, &c.maxRetries, &c.minGB, &c.then, &c.tp, &c.runtime, &c.controlled}
}

// row is the spec the scanned columns describe.
func (c *specColumns) row() specRow {
	sr := specRow{id: c.sr.id}
	sr.spec.Name = coordinate.Name{Bytes: string(c.name), Text: c.nameText}
	sr.spec.Definition = coordinate.Data(c.def)
	sr.spec.Meta = coordinate.WorkSpecMeta{
		Priority: int(c.pri), Weight: int(c.wt), Paused: c.paused, Continuous: c.cont,
		CanBeContinuous: c.cb, Interval: time.Duration(c.intervalNS),
		NextContinuous: timeOf(c.nextContinuous), MaxRunning: int(c.mr), MaxGetwork: int(c.mg),
		MaxRetries: int(c.maxRetries), MinGB: c.minGB, Then: string(c.then), ThenPreempts: c.tp,
		Runtime:    string(c.runtime),
		Task:       coordinate.SpecTask(string(c.name), string(c.runtime), c.def),
		Controlled: coordinate.ControlledSettings(c.controlled),
	}
	return sr
}

// querier is what both the pool and a transaction offer.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// lookupSpec reads one spec of the namespace, or wraps
// coordinate.ErrNoSuchWorkSpec. With forUpdate the row is locked.
func (ns *namespace) lookupSpec(ctx context.Context, q querier, name string, forUpdate bool) (specRow, error) {
	sql := specGetSQL
	if forUpdate {
		sql = specGetForUpdateSQL
	}
	sr, err := scanSpec(q.QueryRow(ctx, sql, ns.id, bytesOf(name)))
	if errNotFound(err) {
		return sr, fmt.Errorf("%w %q", coordinate.ErrNoSuchWorkSpec, name)
	}
	if err != nil {
		return sr, fmt.Errorf("postgres work spec %q: %w", name, err)
	}
	return sr, nil
}

// specID returns the id of a spec of the namespace, or wraps
// coordinate.ErrNoSuchWorkSpec.
func (ns *namespace) specID(ctx context.Context, q querier, name string) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, specIDSQL, ns.id, bytesOf(name)).Scan(&id)
	if errNotFound(err) {
		return 0, fmt.Errorf("%w %q", coordinate.ErrNoSuchWorkSpec, name)
	}
	if err != nil {
		return 0, fmt.Errorf("postgres work spec %q: %w", name, err)
	}
	return id, nil
}

func (ns *namespace) SetWorkSpec(ctx context.Context, definition coordinate.Data) (*coordinate.WorkSpec, error) {
	name, meta, err := coordinate.ParseWorkSpec(definition)
	if err != nil {
		return nil, err
	}
	// Leases that lapsed before the change lapse under the settings they
	// were taken with (max_retries), as in the memory backend.
	if err := ns.b.expireLeases(ctx, ns.now()); err != nil {
		return nil, err
	}
	// Everything but next_continuous is re-derived from the definition.
	row := ns.b.pool.QueryRow(ctx, specSetSQL,
		ns.id, bytesOf(name.Bytes), name.Text, []byte(definition),
		meta.Priority, meta.Weight, meta.Paused, meta.Continuous, meta.CanBeContinuous,
		int64(meta.Interval), meta.MaxRunning, meta.MaxGetwork, meta.MaxRetries, meta.MinGB,
		bytesOf(meta.Then), meta.ThenPreempts, bytesOf(meta.Runtime))
	sr, err := scanSpec(row)
	if err != nil {
		return nil, fmt.Errorf("postgres set work spec %q: %w", name.Bytes, err)
	}
	return &sr.spec, nil
}

func (ns *namespace) WorkSpec(ctx context.Context, name string) (*coordinate.WorkSpec, error) {
	sr, err := ns.lookupSpec(ctx, ns.b.pool, name, false)
	if err != nil {
		return nil, err
	}
	return &sr.spec, nil
}

func (ns *namespace) ListWorkSpecs(ctx context.Context, start string, limit int) ([]*coordinate.WorkSpec, *coordinate.Name, error) {
	var most *int64 // one more than limit, to know whether the listing is complete; nil: all
	if limit > 0 {
		n := int64(limit) + 1
		most = &n
	}
	rows, err := ns.b.pool.Query(ctx, specsListSQL, ns.id, bytesOf(start), most)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres list work specs: %w", err)
	}
	srs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (specRow, error) { return scanSpec(r) })
	if err != nil {
		return nil, nil, fmt.Errorf("postgres list work specs: %w", err)
	}
	var next *coordinate.Name
	if limit > 0 && len(srs) > limit {
		n := srs[limit].spec.Name
		next = &n
		srs = srs[:limit]
	}
	specs := make([]*coordinate.WorkSpec, len(srs))
	for i := range srs {
		specs[i] = &srs[i].spec
	}
	return specs, next, nil
}

func (ns *namespace) ControlWorkSpec(ctx context.Context, name string, control coordinate.WorkSpecControl) error {
	return ns.b.inTx(ctx, func(tx pgx.Tx) error {
		sr, err := ns.lookupSpec(ctx, tx, name, true)
		if err != nil {
			return err
		}
		m := sr.spec.Meta
		if err := m.Apply(control); err != nil {
			return fmt.Errorf("%w: cannot make non-continuous work spec %q continuous", err, name)
		}
		_, err = tx.Exec(ctx, specControlSQL,
			sr.id, m.Paused, m.Continuous, int64(m.Interval), m.MaxRunning, m.Weight, int16(m.Controlled))
		if err != nil {
			return fmt.Errorf("postgres control work spec %q: %w", name, err)
		}
		return nil
	})
}

func (ns *namespace) DeleteWorkSpec(ctx context.Context, name string) error {
	return ns.b.inTxCounted(ctx, func(tx pgx.Tx, d countDelta) error {
		g := groupBumps{}
		if err := ns.deleteSpec(ctx, tx, d, g, name); err != nil {
			return err
		}
		if err := d.apply(ctx, tx); err != nil {
			return err
		}
		return g.apply(ctx, tx)
	})
}

// deleteSpec deletes spec name in tx with its units, and fails the units
// of other specs that waited for them, counting in d and g, which the
// caller applies. It fails with coordinate.ErrNoSuchWorkSpec when there is
// no such spec.
func (ns *namespace) deleteSpec(ctx context.Context, tx pgx.Tx, d countDelta, g groupBumps, name string) error {
	// Read before they go, in the round trip that deletes them: the units
	// other specs wait for (only their waiters fail; one waiting for a key
	// never added keeps waiting), and the groups of the spec's units (its
	// deletion is their progress).
	var (
		b              pgx.Batch
		waited, groups [][]byte
		deleted        int64
	)
	collect := func(into *[][]byte) func(pgx.Rows) error {
		return func(rows pgx.Rows) error {
			var err error
			*into, err = pgx.CollectRows(rows, pgx.RowTo[[]byte])
			return err
		}
	}
	b.Queue(depsOnSpecUnitsSQL, ns.id, bytesOf(name)).Query(collect(&waited))
	b.Queue(specUnitGroupsSQL, ns.id, bytesOf(name)).Query(collect(&groups))
	b.Queue(specDeleteSQL, ns.id, bytesOf(name)).Exec(func(tag pgconn.CommandTag) error {
		deleted = tag.RowsAffected()
		return nil
	})
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("postgres delete work spec %q: %w", name, err)
	}
	if deleted == 0 {
		return fmt.Errorf("%w %q", coordinate.ErrNoSuchWorkSpec, name)
	}
	now := ns.now()
	for _, grp := range groups {
		g.bump(ns.id, grp, now)
	}
	// Units of other specs waiting for the deleted units fail.
	if err := ns.failDependentsOfDeleted(ctx, tx, ns.unitKeys(name, waited, nil), d, g); err != nil {
		return fmt.Errorf("postgres delete work spec %q: %w", name, err)
	}
	return nil
}

func (ns *namespace) Clear(ctx context.Context) (int, error) {
	tag, err := ns.b.pool.Exec(ctx, specsClearSQL, ns.id)
	if err != nil {
		return 0, fmt.Errorf("postgres clear: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
