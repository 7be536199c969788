package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// A worker whose heartbeat asked for it (coordinate.ReleasesLeasesOnExit)
// loses its leases when its record goes: when it expires (found by the
// lease sweep, or by the lazy expiry of the worker methods) or when it
// unregisters. Its leases are made to end just before now, so the lease
// sweep releases them exactly as if they had expired (AVAILABLE, or FAILED
// past max_retries). The flag lives in the heartbeat data, so no column is
// needed; only expired (or unregistering) workers' data is read.

// endLeasesSQL shortens the leases a worker still holds to $3.
const endLeasesSQL = `UPDATE work_unit u SET expires = $3
	FROM worker_unit wu
	WHERE wu.worker_id = $1 AND u.spec_id = wu.spec_id AND u.key = wu.key
		AND u.status = 3 AND u.worker = $2 AND u.expires > $3`

// endLeasesOfDeadOwners ends the leases of the workers selected by
// where/args (columns of worker w) that asked for it, and deletes those
// workers' records when deleteDead is set. When it ended any, the next
// lease sweep runs even at the same time as the last one. It reports how
// many workers it found asking.
func (b *Backend) endLeasesOfDeadOwners(ctx context.Context, tx pgx.Tx, now time.Time, deleteDead bool, where string, args ...any) (int, error) {
	rows, err := tx.Query(ctx, "SELECT w.id, w.name, w.data FROM worker w WHERE "+where+" ORDER BY w.id FOR UPDATE", args...)
	if err != nil {
		return 0, fmt.Errorf("postgres dead workers: %w", err)
	}
	type dead struct {
		id   int64
		name []byte
	}
	var deads []dead
	var (
		id         int64
		name, data []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &name, &data}, func() error {
		if coordinate.ReleasesLeasesOnExit(data) {
			deads = append(deads, dead{id, append([]byte(nil), name...)})
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres dead workers: %w", err)
	}
	end := now.UnixNano() - 1
	for _, d := range deads {
		if _, err := tx.Exec(ctx, endLeasesSQL, d.id, d.name, end); err != nil {
			return 0, fmt.Errorf("postgres ending the leases of worker %q: %w", d.name, err)
		}
		if deleteDead {
			if _, err := tx.Exec(ctx, "DELETE FROM worker WHERE id = $1", d.id); err != nil {
				return 0, fmt.Errorf("postgres removing worker %q: %w", d.name, err)
			}
		}
	}
	if len(deads) > 0 {
		b.sweeper.invalidate()
	}
	return len(deads), nil
}

// sweepDeadOwners runs before the lease sweep: the expired workers of any
// namespace that asked for the release lose their leases and records.
func (b *Backend) sweepDeadOwners(ctx context.Context, now time.Time) error {
	return b.inTx(ctx, func(tx pgx.Tx) error {
		_, err := b.endLeasesOfDeadOwners(ctx, tx, now, true, "w.expires < $1", now.UnixNano())
		return err
	})
}
