package postgres

import (
	"context"
	_ "embed"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// The statements, from sql/leases.sql.
var (
	leasesExhaustedSQL = namedSQL("leases_exhausted")
	depsUnblockFreeSQL = namedSQL("deps_unblock_free")
)

//go:embed queries/sweep.sql
var sweepSQL string

// sweepBatch is the most leases one sweep statement expires; the sweep
// repeats until fewer remain.
const sweepBatch = 5000

// realClockSweepEvery throttles the sweep when the backend runs on the
// system clock: leases are expired at most this late. With any other clock
// (tests) the sweep runs whenever the clock has moved, which is exact.
const realClockSweepEvery = 100 * time.Millisecond

// sweeper remembers when this backend last expired leases.
type sweeper struct {
	mu      sync.Mutex
	last    time.Time
	running bool
}

// due reports whether a sweep should run at now, and marks it running. A
// sweep at the same time as the last one is never due; with every > 0, nor
// is one less than every after it.
func (s *sweeper) due(now time.Time, every time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return false
	}
	if !s.last.IsZero() && !now.Before(s.last) && (now.Equal(s.last) || now.Sub(s.last) < every) {
		return false
	}
	s.running = true
	return true
}

// invalidate makes the next sweep due whatever the time (leases were
// shortened: ownerdeath.go).
func (s *sweeper) invalidate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = time.Time{}
}

func (s *sweeper) done(now time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = false
	if ok {
		s.last = now
	}
}

// expireLeases makes sure every lease that ended before now is expired
// (SEMANTICS §5.2, §6). It is cheap when nothing has expired: one probe of
// the partial index on pending expiries.
func (b *Backend) expireLeases(ctx context.Context, now time.Time) error {
	every := time.Duration(0)
	if _, ok := b.clock.(coordinate.SystemClock); ok {
		every = realClockSweepEvery
	}
	if !b.sweeper.due(now, every) {
		return nil
	}
	err := b.sweepAll(ctx, now)
	b.sweeper.done(now, err == nil)
	return err
}

func (b *Backend) sweepAll(ctx context.Context, now time.Time) error {
	if err := b.sweepDeadOwners(ctx, now); err != nil {
		return err
	}
	for {
		var (
			n       int64
			expired specEvents
		)
		err := b.inTx(ctx, func(tx pgx.Tx) error {
			var err error
			n, expired, err = sweepOnce(ctx, tx, now)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres lease expiry: %w", err)
		}
		b.events.committed(expired)
		if n < sweepBatch {
			break
		}
	}
	if err := b.inTxCounted(ctx, func(tx pgx.Tx, d countDelta) error { return expireExhausted(ctx, tx, now, d) }); err != nil {
		return fmt.Errorf("postgres lease expiry (max_retries): %w", err)
	}
	return nil
}

// sweepOnce runs sweep.sql once in tx, and counts the leases it expired.
// The units it put back to BLOCKED are checked again, in the same
// transaction, by deps_unblock_free: sweep.sql read their edges at its
// statement's snapshot, and a finish that deleted the last edge and
// committed while it ran left them BLOCKED with no edge; the next
// statement sees that deletion. Both commit together, so a daemon that
// stops between them leaves the leases unexpired, not the units stuck.
func sweepOnce(ctx context.Context, tx pgx.Tx, now time.Time) (int64, specEvents, error) {
	rows, err := tx.Query(ctx, sweepSQL, now.UnixNano(), sweepBatch)
	if err != nil {
		return 0, nil, err
	}
	expired := specEvents{}
	var (
		total, spec, n int64
		keys           [][]byte
		blocked        rowKeys
	)
	if _, err := pgx.ForEachRow(rows, []any{&spec, &n, &keys}, func() error {
		expired.of(spec).Expired += uint64(n)
		total += n
		for _, k := range keys {
			blocked.add(spec, k)
		}
		return nil
	}); err != nil {
		return 0, nil, err
	}
	if blocked.len() > 0 {
		if _, err := tx.Exec(ctx, depsUnblockFreeSQL, blocked.specs, blocked.keys, now.UnixNano()); err != nil {
			return 0, nil, err
		}
	}
	return total, expired, nil
}

// expireExhausted expires the leases sweep.sql leaves alone: those of
// units whose spec's max_retries is used up (coordinate.RetriesExhausted,
// in SQL), which coordinate.ExpireLease fails (status FAILED, completion
// time now, data with traceback "too many retries", the worker kept).
// As for any failure, their groups progress and their dependents fail
// with them (propagateFailures), as the memory backend and the general
// update path do when they apply the expiry first.
func expireExhausted(ctx context.Context, tx pgx.Tx, now time.Time, d countDelta) error {
	rows, err := tx.Query(ctx, leasesExhaustedSQL, now.UnixNano())
	if err != nil {
		return err
	}
	var units rowKeys
	var datas [][]byte
	var failed []unitKey
	g := groupBumps{}
	var spec, nsID int64
	var name, key, data, grp []byte
	var attempts, maxRetries int32
	if _, err := pgx.ForEachRow(rows, []any{&spec, &nsID, &name, &key, &data, &attempts, &maxRetries, &grp}, func() error {
		st := coordinate.ExpireLease(coordinate.UnitState{Status: coordinate.StatusPending, Data: data}, int(attempts), int(maxRetries), now)
		if st.Status != coordinate.StatusFailed || !st.Expiration.Equal(now) {
			return fmt.Errorf("unit %q of spec %d: the SQL and coordinate.ExpireLease disagree on max_retries", key, spec)
		}
		units.add(spec, key)
		datas = append(datas, st.Data)
		d.expire(spec, coordinate.StatusPending, st.Status)
		g.bump(nsID, grp, now)
		failed = append(failed, unitKey{nsID, string(name), string(key)})
		return nil
	}); err != nil {
		return err
	}
	if units.len() == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, unitsFailWithDataSQL, units.specs, units.keys, now.UnixNano(), datas); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, unlistSQL, units.specs, units.keys); err != nil {
		return err
	}
	// Their dependents are read now that they are locked and written
	// (update.go does the same).
	if err := propagateFailures(ctx, tx, now, failed, nil, d, g); err != nil {
		return err
	}
	if err := g.apply(ctx, tx); err != nil {
		return err
	}
	return d.apply(ctx, tx)
}
