package cachekeep

import (
	"context"
	_ "embed"
	"sync/atomic"
	"time"
)

var (
	//go:embed sql/try_lock.sql
	tryLockSQL string
	//go:embed sql/vacuum_units.sql
	vacuumUnitsSQL string
)

// Vacuuming behind claims. A claim takes the best units from the front of
// the partial index of available units; their entries stay there, dead,
// until VACUUM removes them, and every later claim reads past them. At the
// rates a busy queue drains, autovacuum (which looks once a minute) lets
// hundreds of thousands pile up and claims grow several times costlier
// (docs/postgres.md has the figures). So the Keeper runs VACUUM on work_unit
// itself, in the background, each time the units it claimed since the last
// one reach vacuumAfterClaims. Of several daemons only one vacuums at a
// time (a try-lock, never a wait). A database user that does not own the
// table gets a warning from PostgreSQL and no VACUUM; autovacuum still
// runs.

const (
	defaultVacuumAfterClaims = 100_000
	vacuumTimeout            = 10 * time.Minute
	// vacuumLockKey is the advisory lock held while vacuuming; the
	// backend's own single-key lock (postgres/migrate.go, "coord") is
	// another key.
	vacuumLockKey = 0x636f6f7276 // "coorv"
)

type vacuumer struct {
	run  backgroundRun // counts units claimed
	runs atomic.Int64  // VACUUMs this Keeper ran (Settle)
}

// noteClaimed records n claimed units and starts a background VACUUM when
// enough have been claimed.
func (k *Keeper) noteClaimed(n int) {
	if k.vacuumEvery < 0 || n == 0 {
		return
	}
	k.vacuum.run.add(int64(n), int64(k.vacuumEvery), k.runVacuum)
}

func (k *Keeper) runVacuum() {
	ctx, cancel := context.WithTimeout(context.Background(), vacuumTimeout)
	defer cancel()
	ran, err := k.vacuumOnce(ctx)
	switch {
	case err != nil:
		k.log.Warn("postgres backend: VACUUM work_unit failed", "err", err)
	case ran:
		k.vacuum.runs.Add(1)
		k.log.Debug("postgres backend: vacuumed work_unit")
	}
}

// vacuumOnce runs VACUUM work_unit unless another daemon is running it.
func (k *Keeper) vacuumOnce(ctx context.Context) (bool, error) {
	conn, err := k.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, tryLockSQL, int64(vacuumLockKey)).Scan(&locked); err != nil {
		return false, err
	}
	if !locked {
		return false, nil
	}
	_, err = conn.Exec(ctx, vacuumUnitsSQL)
	if uerr := Unlock(ctx, conn, vacuumLockKey); uerr != nil {
		// A connection that may still hold the lock must not go back to
		// the pool.
		conn.Conn().Close(ctx) //nolint:errcheck // the pool drops a closed connection
	}
	return err == nil, err
}
