package postgres

import (
	"context"
	"sync/atomic"
	"time"
)

// The statements, from sql/maintenance.sql.
var (
	sessionTryLockSQL = namedSQL("session_try_lock")
	vacuumUnitsSQL    = namedSQL("vacuum_units")
)

// Vacuuming behind claims. A claim takes the best units from the front of
// the partial index of available units; their entries stay there, dead,
// until VACUUM removes them, and every later claim reads past them. At the
// rates a busy queue drains, autovacuum (which looks once a minute) lets
// hundreds of thousands pile up and claims grow several times costlier
// (docs/postgres.md has the figures). So the backend runs VACUUM on work_unit
// itself, in the background, each time the units it claimed since the last
// one reach vacuumAfterClaims. Of several daemons only one vacuums at a
// time (a try-lock, never a wait). A database user that does not own the
// table gets a warning from PostgreSQL and no VACUUM; autovacuum still
// runs.

const (
	defaultVacuumAfterClaims = 100_000
	vacuumTimeout            = 10 * time.Minute
	// vacuumLockKey is the advisory lock held while vacuuming.
	vacuumLockKey = 0x636f6f7276 // "coorv"
)

type vacuumer struct {
	run  backgroundRun // counts units claimed
	runs atomic.Int64  // VACUUMs this backend ran (tests)
}

// noteClaimed records n claimed units and starts a background VACUUM when
// enough have been claimed.
func (b *Backend) noteClaimed(n int) {
	every := b.opts.VacuumAfterClaims
	if every == 0 {
		every = defaultVacuumAfterClaims
	}
	if every < 0 || n == 0 {
		return
	}
	b.vacuum.run.add(int64(n), int64(every), b.runVacuum)
}

func (b *Backend) runVacuum() {
	ctx, cancel := context.WithTimeout(context.Background(), vacuumTimeout)
	defer cancel()
	ran, err := b.vacuumOnce(ctx)
	switch {
	case err != nil:
		b.log.Warn("postgres backend: VACUUM work_unit failed", "err", err)
	case ran:
		b.vacuum.runs.Add(1)
		b.log.Debug("postgres backend: vacuumed work_unit")
	}
}

// vacuumOnce runs VACUUM work_unit unless another daemon is running it.
func (b *Backend) vacuumOnce(ctx context.Context) (bool, error) {
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, sessionTryLockSQL, int64(vacuumLockKey)).Scan(&locked); err != nil {
		return false, err
	}
	if !locked {
		return false, nil
	}
	_, err = conn.Exec(ctx, vacuumUnitsSQL)
	if _, uerr := conn.Exec(ctx, sessionUnlockSQL, int64(vacuumLockKey)); uerr != nil {
		// A connection that may still hold the lock must not go back to
		// the pool.
		conn.Conn().Close(ctx) //nolint:errcheck // the pool drops a closed connection
	}
	return err == nil, err
}
