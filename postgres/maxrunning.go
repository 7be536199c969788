package postgres

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// max_running across daemons. The scheduler chooses a spec and sizes a
// claim (coordinate.WorkCount) from counts read before the claim, so two
// claims on one spec, from two daemons or from two batches of one, could
// together pass max_running. A claim on a spec whose max_running is set
// therefore runs in a transaction that first takes the spec's transaction
// advisory lock, and its statement (claimCappedSQL) limits itself to
// max_running minus the pending units it then reads: the lock is held
// until COMMIT, so the next claim on the spec reads counts that include
// this one. Claims on specs without max_running (the hot path) take no
// lock and run claim.sql unchanged. Only claims are gated: max_running
// limits what get_work hands out (SEMANTICS §4.2), and everything else
// that changes a spec's pending count lowers it, except update_work_unit
// to PENDING, which max_running never limited.

// maxRunningLockClass is the first key of the two-key advisory locks
// taken per spec (the second is the spec id); the single-key locks of
// migrate.go and cachekeep/vacuum.go are a separate key space.
const maxRunningLockClass = 0x636f6f72 // "coor"

//go:embed queries/advisory_lock.sql
var advisoryLockSQL string

// claimCappedSQL is claim.sql with its LIMIT capped at the spec's
// max_running minus its pending units, read in the claim's own snapshot
// (taken after the lock). It is coordinate.WorkCount's max_running rule,
// applied again where the count is exact.
var claimCappedSQL = capClaim(claimSQL)

const claimLimit = "LIMIT $3\n"

// The statements, from sql/getwork.sql: maxRunningValue is
// coordinate.WorkSpecMeta.MaxRunningValue in SQL.
var (
	maxRunningValue = namedSQL("max_running_value")
	maxRunningRoom  = namedSQL("max_running_room")
)

func capClaim(sql string) string {
	if strings.Count(sql, claimLimit) != 1 {
		panic("postgres: queries/claim.sql must contain exactly one " + strings.TrimSpace(claimLimit))
	}
	return strings.Replace(sql, claimLimit, `LIMIT LEAST($3, COALESCE((
        SELECT GREATEST(0, `+maxRunningValue+` - COALESCE((
            SELECT sum(c.n) FROM unit_count c WHERE c.spec_id = $1 AND c.status = 3), 0))
        FROM work_spec s WHERE s.id = $1 AND s.max_running <> 0), $3))
`, 1)
}

// capped reports whether claims on this spec must be gated.
func (cl *claimRequest) capped() bool { return cl.spec.spec.Meta.MaxRunning != 0 }

// queueMaxRunningLocks queues the advisory locks of the capped specs that
// claims touch, in spec id order (so batches never wait for each other in
// a cycle), and returns how many it queued. They come first in the
// transaction, before any row lock.
func queueMaxRunningLocks(b *pgx.Batch, claims []*claimRequest) int {
	var ids []int64
	for _, cl := range claims {
		if cl.capped() {
			ids = append(ids, cl.spec.id)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for _, id := range ids {
		b.Queue(advisoryLockSQL, maxRunningLockClass, int32(id))
	}
	return len(ids)
}

// lockMaxRunning takes the max_running lock of one spec in tx and reports
// whether one more unit may be pending.
func lockMaxRunning(ctx context.Context, tx pgx.Tx, specID int64) (bool, error) {
	if _, err := tx.Exec(ctx, advisoryLockSQL, maxRunningLockClass, int32(specID)); err != nil {
		return false, fmt.Errorf("max_running lock: %w", err)
	}
	var room bool
	err := tx.QueryRow(ctx, maxRunningRoom, specID).Scan(&room)
	if err != nil {
		return false, fmt.Errorf("max_running count: %w", err)
	}
	return room, nil
}
