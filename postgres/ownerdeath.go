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

// The statements, from sql/ownerdeath.sql; the owners_* select the
// workers to look at.
var (
	endLeasesSQL        = namedSQL("owner_end_leases")
	ownersExpiredAllSQL = namedSQL("owners_expired_all")
	ownersExpiredSQL    = namedSQL("owners_expired")
	ownerNamedSQL       = namedSQL("owner_named")
	ownerDeleteSQL      = namedSQL("owner_delete")
)

// endLeasesOfDeadOwners ends the leases of the workers selected by
// owners (one of the owners_* statements) with args that asked for it, and deletes those
// workers' records when deleteDead is set. When it ended any, the next
// lease sweep runs even at the same time as the last one. It reports how
// many workers it found asking.
func (b *Backend) endLeasesOfDeadOwners(ctx context.Context, tx pgx.Tx, now time.Time, deleteDead bool, owners string, args ...any) (int, error) {
	rows, err := tx.Query(ctx, owners, args...)
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
			if _, err := tx.Exec(ctx, ownerDeleteSQL, d.id); err != nil {
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
		_, err := b.endLeasesOfDeadOwners(ctx, tx, now, true, ownersExpiredAllSQL, now.UnixNano())
		return err
	})
}
