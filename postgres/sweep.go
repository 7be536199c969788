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
		var n int64
		if err := b.pool.QueryRow(ctx, sweepSQL, now.UnixNano(), sweepBatch).Scan(&n); err != nil {
			if retryable(err) {
				continue
			}
			return fmt.Errorf("postgres lease expiry: %w", err)
		}
		if n < sweepBatch {
			break
		}
	}
	if err := b.inTx(ctx, func(tx pgx.Tx) error { return expireExhausted(ctx, tx, now) }); err != nil {
		return fmt.Errorf("postgres lease expiry (max_retries): %w", err)
	}
	return nil
}

// expireExhausted fails the expired units whose spec's max_retries is used
// up: status FAILED, completion time now, data with traceback "too many
// retries" (the worker is kept, as for any failure).
func expireExhausted(ctx context.Context, tx pgx.Tx, now time.Time) error {
	rows, err := tx.Query(ctx, `SELECT u.spec_id, u.key, u.data FROM work_unit u JOIN work_spec s ON s.id = u.spec_id
		WHERE u.status = 3 AND u.expires < $1 AND s.max_retries > 0 AND u.attempts > s.max_retries
		ORDER BY u.spec_id, u.key
		FOR UPDATE OF u SKIP LOCKED`, now.UnixNano())
	if err != nil {
		return err
	}
	var units rowKeys
	var datas [][]byte
	d := countDelta{}
	var spec int64
	var key, data []byte
	if _, err := pgx.ForEachRow(rows, []any{&spec, &key, &data}, func() error {
		units.add(spec, key)
		datas = append(datas, coordinate.WithTraceback(data, coordinate.TracebackTooManyRetries))
		d.move(spec, coordinate.StatusPending, coordinate.StatusFailed)
		return nil
	}); err != nil {
		return err
	}
	if units.len() == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE work_unit u SET status = 5, data = r.data, expires = $4, lease_id = NULL
		FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) AS r (spec_id, key, data)
		WHERE u.spec_id = r.spec_id AND u.key = r.key`, units.specs, units.keys, datas, now.UnixNano()); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, unlistSQL, units.specs, units.keys); err != nil {
		return err
	}
	return d.apply(ctx, tx)
}
