package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// Worker records (SEMANTICS §11) are rows of the worker table; a record
// whose expiry has passed is deleted before any registry operation reads
// it, together with its outstanding-unit entries (ON DELETE CASCADE).

// The statements, from sql/workers.sql.
var (
	workerExpireSQL     = namedSQL("worker_expire")
	workerHeartbeatSQL  = namedSQL("worker_heartbeat")
	workerUnregisterSQL = namedSQL("worker_unregister")
	workersListSQL      = namedSQL("workers_list")
	workerGetSQL        = namedSQL("worker_get")
	workerChildrenSQL   = namedSQL("worker_children")
	workerUnitLapseSQL  = namedSQL("worker_unit_lapse")
)

func scanWorker(r pgx.Row) (int64, *coordinate.WorkerInfo, error) {
	var (
		id                 int64
		name, mode, data   []byte
		parent             []byte
		nameText           bool
		parentText         *bool
		lastHeard, expires int64
	)
	if err := r.Scan(&id, &name, &nameText, &mode, &data, &parent, &parentText, &lastHeard, &expires); err != nil {
		return 0, nil, err
	}
	return id, &coordinate.WorkerInfo{
		ID:        coordinate.Name{Bytes: string(name), Text: nameText},
		Mode:      coordinate.Data(mode),
		Data:      coordinate.Data(data),
		Parent:    nameOf(parent, parentText),
		LastHeard: time.Unix(0, lastHeard).UTC(),
		Expires:   time.Unix(0, expires).UTC(),
	}, nil
}

// expireWorkers deletes the records of workers whose expiry has passed.
func (ns *namespace) expireWorkers(ctx context.Context, tx pgx.Tx, now time.Time) error {
	if _, err := ns.b.endLeasesOfDeadOwners(ctx, tx, now, false, ownersExpiredSQL, ns.id, now.UnixNano()); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, workerExpireSQL, ns.id, now.UnixNano())
	if err != nil {
		return fmt.Errorf("postgres worker expiry: %w", err)
	}
	return nil
}

func (ns *namespace) WorkerHeartbeat(ctx context.Context, hb coordinate.Heartbeat) error {
	now := ns.now()
	mode, data := hb.Mode, hb.Data
	if mode == nil {
		mode = coordinate.Null
	}
	if data == nil {
		data = coordinate.Null
	}
	parent, parentText := nameCols(hb.Parent)
	return ns.b.inTx(ctx, func(tx pgx.Tx) error {
		if err := ns.expireWorkers(ctx, tx, now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, workerHeartbeatSQL,
			ns.id, bytesOf(hb.Worker.Bytes), hb.Worker.Text, []byte(mode), []byte(data), parent, parentText,
			now.UnixNano(), now.Add(hb.Expire).UnixNano())
		if err != nil {
			return fmt.Errorf("postgres worker heartbeat %q: %w", hb.Worker.Bytes, err)
		}
		return nil
	})
}

func (ns *namespace) UnregisterWorker(ctx context.Context, id string) error {
	now := ns.now()
	return ns.b.inTx(ctx, func(tx pgx.Tx) error {
		if err := ns.expireWorkers(ctx, tx, now); err != nil {
			return err
		}
		if _, err := ns.b.endLeasesOfDeadOwners(ctx, tx, now, false, ownerNamedSQL, ns.id, bytesOf(id)); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, workerUnregisterSQL, ns.id, bytesOf(id))
		if err != nil {
			return fmt.Errorf("postgres unregister worker %q: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w %q", coordinate.ErrNoSuchWorker, id)
		}
		return nil
	})
}

func (ns *namespace) Workers(ctx context.Context) ([]*coordinate.WorkerInfo, error) {
	now := ns.now()
	var out []*coordinate.WorkerInfo
	err := ns.b.inTx(ctx, func(tx pgx.Tx) error {
		out = nil
		if err := ns.expireWorkers(ctx, tx, now); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, workersListSQL, ns.id)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*coordinate.WorkerInfo, error) {
			_, w, err := scanWorker(r)
			return w, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres workers: %w", err)
	}
	return out, nil
}

func (ns *namespace) Worker(ctx context.Context, id string) (*coordinate.WorkerInfo, error) {
	_, w, err := scanWorker(ns.b.pool.QueryRow(ctx, workerGetSQL, ns.id, bytesOf(id), ns.now().UnixNano()))
	if errNotFound(err) {
		return nil, fmt.Errorf("%w %q", coordinate.ErrNoSuchWorker, id)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres worker %q: %w", id, err)
	}
	return w, nil
}

func (ns *namespace) ChildWorkUnits(ctx context.Context, parent string) ([]coordinate.ChildWorker, error) {
	now := ns.now()
	if err := ns.b.expireLeases(ctx, now); err != nil {
		return nil, err
	}
	out, err := ns.workerUnits(ctx, workerChildrenSQL, bytesOf(parent), now)
	if err != nil {
		return nil, fmt.Errorf("postgres child work units of %q: %w", parent, err)
	}
	return out, nil
}

// workerUnits lists the live workers a statement selects (sql/workers.sql:
// $1 namespace, $2 arg, $3 now) and the units handed to them that are not
// yet finished or failed.
func (ns *namespace) workerUnits(ctx context.Context, sql string, arg []byte, now time.Time) ([]coordinate.ChildWorker, error) {
	rows, err := ns.b.pool.Query(ctx, sql, ns.id, arg, now.UnixNano())
	if err != nil {
		return nil, err
	}
	var out []coordinate.ChildWorker
	var (
		child, spec, key, data, worker []byte
		childText                      bool
		specText, keyText, workerText  *bool
		status                         *int16
		expires, lapsed                *int64
	)
	_, err = pgx.ForEachRow(rows, []any{&child, &childText, &spec, &specText, &key, &keyText, &data, &status, &worker, &workerText, &expires, &lapsed}, func() error {
		if len(out) == 0 || out[len(out)-1].Worker.Bytes != string(child) {
			out = append(out, coordinate.ChildWorker{Worker: coordinate.Name{Bytes: string(child), Text: childText}})
		}
		if key == nil {
			return nil
		}
		cu := coordinate.ChildWorkUnit{
			Spec:   *nameOf(spec, specText),
			Key:    *nameOf(key, keyText),
			Data:   coordinate.Data(append([]byte(nil), data...)),
			Worker: nameOf(worker, workerText),
		}
		switch {
		case status != nil && coordinate.Status(*status) == coordinate.StatusPending:
			cu.Expires = timeOf(expires)
		case worker == nil:
			cu.Expires = timeOf(lapsed) // nobody holds it: the child's lease lapsed then
		}
		c := &out[len(out)-1]
		c.Units = append(c.Units, cu)
		return nil
	})
	return out, err
}
