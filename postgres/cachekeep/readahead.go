package cachekeep

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Reading ahead of claims. Claims take units in (priority, key) order,
// which is not the order they were added in, so in a queue much bigger
// than PostgreSQL's cache every claimed unit is a page read from disk, and
// a claim statement reads its pages one after another, nearly all of its
// time waiting for reads (docs/postgres.md, "Reading ahead of claims",
// has the measurements). After each
// big claim the Keeper reads, on another connection, the rows of the
// units the next claims of that spec will take: their keys from the
// available-units index, then the rows by a bitmap heap scan with a high
// effective_io_concurrency, which asks the kernel for all of their pages
// at once, several times faster.
// The claims then find their pages in memory. It only warms caches: what
// it reads may be claimed by others or changed meanwhile, which costs
// nothing but the read. When a read-ahead finds nearly every page already
// in shared_buffers (a queue that fits in the cache) it costs CPU and
// saves nothing, so the spec goes without for a while.

var (
	//go:embed sql/read_ahead_keys.sql
	readAheadKeysSQL string
	//go:embed sql/read_ahead_rows.sql
	readAheadRowsSQL string
)

const (
	// readAheadMin is the smallest claim (units, over all requests sharing
	// the statement) that starts reading ahead for a spec nobody read
	// ahead for yet; smaller claims read few enough pages that a
	// read-ahead's round trips would cost more.
	readAheadMin = 256
	// readAheadClaims is how many claims of the last one's size the
	// Keeper keeps read ahead.
	readAheadClaims = 2
	// readAheadWindow is the fewest units the Keeper keeps read ahead.
	// With fewer workers, or requests spread over time, claims are smaller
	// than the demand they add up to: at 64 connections asking for 100
	// units each, most claim statements took 100-350 units, and two of
	// those read ahead fell behind.
	readAheadWindow = 4096
	// readAheadCached: a read-ahead that read fewer than one page from
	// outside shared_buffers per readAheadCached rows found the spec's
	// units cached, and the spec goes readAheadQuiet without.
	readAheadCached  = 16
	readAheadQuiet   = 10 * time.Second
	readAheadTimeout = 10 * time.Second
)

// readAheadSpec is what the Keeper knows of one spec's read-ahead.
type readAheadSpec struct {
	running    bool
	frontier   Pos       // the last unit read ahead
	ahead      int       // units read ahead of the claims (an estimate)
	quietUntil time.Time // no read-ahead before then: the units were cached
}

type readAhead struct {
	mu     sync.Mutex
	specs  map[int64]*readAheadSpec
	off    bool // the server refused the settings: never again
	closed bool // the Keeper is closing: start nothing
	wg     sync.WaitGroup
	// active counts the read-aheads under way; idle is closed when the
	// last of them ends (settle).
	active int
	idle   chan struct{}
	runs   atomic.Int64 // read-aheads started (tests)
	warm   headWarmer   // warming queue fronts after bulk adds (warmhead.go)
}

// newReadAhead returns an idle read-ahead whose warms read warmUnits
// units.
func newReadAhead(warmUnits int) readAhead {
	return readAhead{
		specs: map[int64]*readAheadSpec{},
		warm:  headWarmer{idle: warmIdle, units: warmUnits, specs: map[int64]*specWarm{}},
	}
}

// close stops pending warms and waits for read-aheads under way.
func (ra *readAhead) close() {
	ra.mu.Lock()
	ra.closed = true
	ra.warm.stopWarming()
	ra.mu.Unlock()
	ra.wg.Wait()
}

// settle waits for the read-aheads under way (others may start meanwhile,
// from warms).
func (ra *readAhead) settle() {
	ra.mu.Lock()
	idle := ra.idle
	if ra.active == 0 {
		idle = nil
	}
	ra.mu.Unlock()
	if idle != nil {
		<-idle
	}
}

// queueHead is a position before every unit.
var queueHead = Pos{Priority: math.Inf(1)}

// claimingUnits tells the read-ahead that claims of n units (one
// statement's, on one spec) are about to start. When nothing is known of the spec yet (its
// first big claim) it reads the units they ask for from the front of the
// queue alongside them: the claim walks their pages one by one while the
// read-ahead asks for all of them at once.
func (k *Keeper) claimingUnits(spec int64, n int) {
	if n < readAheadMin {
		return
	}
	ra := &k.readAhead
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if ra.off || ra.specs[spec] != nil {
		return
	}
	st := &readAheadSpec{frontier: queueHead}
	ra.specs[spec] = st
	k.startReadAhead(spec, st, n)
}

// claimedUnits tells the read-ahead how far claims of n units (one
// statement's, on one spec; the last in claim order at lastPos) got, and
// starts a read-ahead of the spec's next units when
// fewer than readAheadClaims claims' worth (at least readAheadWindow units)
// are read ahead. Claims of any size count once a big claim or a warm
// started reading ahead for the spec.
func (k *Keeper) claimedUnits(spec int64, n int, lastPos Pos) {
	if n == 0 {
		return
	}
	ra := &k.readAhead
	ra.mu.Lock()
	defer ra.mu.Unlock()
	st := ra.specs[spec]
	if ra.off || st == nil {
		return
	}
	if !st.frontier.After(lastPos) {
		// The claims caught up: read ahead from where they are.
		st.frontier, st.ahead = lastPos, 0
	} else {
		st.ahead = max(0, st.ahead-n)
	}
	want := max(readAheadClaims*n, readAheadWindow)
	if st.running || st.ahead >= want/2 || k.clock.Now().Before(st.quietUntil) {
		return
	}
	k.startReadAhead(spec, st, want-st.ahead)
}

// startReadAhead reads count units of spec after st's frontier in the
// background. The caller holds ra.mu.
func (k *Keeper) startReadAhead(spec int64, st *readAheadSpec, count int) {
	ra := &k.readAhead
	if ra.closed {
		return
	}
	st.running = true
	from := st.frontier
	ra.runs.Add(1)
	if ra.active == 0 {
		ra.idle = make(chan struct{})
	}
	ra.active++
	ra.wg.Add(1)
	go func() {
		defer ra.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), readAheadTimeout)
		defer cancel()
		res, err := k.readAheadOnce(ctx, spec, from, count)
		ra.mu.Lock()
		defer ra.mu.Unlock()
		if ra.active--; ra.active == 0 {
			close(ra.idle)
		}
		st.running = false
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr):
			ra.off = true
			k.log.Info("postgres backend: reading ahead of claims turned off", "err", err)
			return
		case err != nil:
			k.log.Debug("postgres backend: read-ahead failed", "spec_id", spec, "err", err)
			return
		case res.units == 0:
			delete(ra.specs, spec)
			return
		}
		if res.pagesRead*readAheadCached < res.units {
			st.quietUntil = k.clock.Now().Add(readAheadQuiet)
		}
		if res.end.After(st.frontier) {
			st.frontier = res.end
			st.ahead += res.units
		}
	}()
}

// readAheadResult is what one read-ahead did.
type readAheadResult struct {
	end       Pos // the last unit read
	units     int // units read
	pagesRead int // pages read from outside shared_buffers
}

// readAheadOnce reads the rows of spec's next count units after from.
func (k *Keeper) readAheadOnce(ctx context.Context, spec int64, from Pos, count int) (readAheadResult, error) {
	var res readAheadResult
	rows, err := k.pool.Query(ctx, readAheadKeysSQL, spec, from.Priority, from.Key, count)
	if err != nil {
		return res, err
	}
	var keys [][]byte
	_, err = pgx.ForEachRow(rows, []any{&res.end.Priority, &res.end.Key}, func() error {
		keys = append(keys, res.end.Key)
		return nil
	})
	if err != nil || len(keys) == 0 {
		return readAheadResult{}, err
	}
	res.units = len(keys)
	batch := &pgx.Batch{}
	batch.Queue("BEGIN")
	// A bitmap heap scan that keeps up to 128 page reads in flight.
	batch.Queue("SET LOCAL enable_indexscan = off")
	batch.Queue("SET LOCAL enable_seqscan = off")
	batch.Queue("SET LOCAL effective_io_concurrency = 128")
	var plan []byte
	batch.Queue(readAheadExplain+readAheadRowsSQL, spec, keys).QueryRow(func(row pgx.Row) error {
		return row.Scan(&plan)
	})
	batch.Queue("COMMIT")
	if err := k.pool.SendBatch(ctx, batch).Close(); err != nil {
		return readAheadResult{}, err
	}
	res.pagesRead, err = sharedBlocksRead(plan)
	return res, err
}

// readAheadExplain runs the row read under EXPLAIN ANALYZE, which reports
// how many pages it read from outside shared_buffers.
const readAheadExplain = "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) "

// sharedBlocksRead takes the pages read from an EXPLAIN (ANALYZE, BUFFERS,
// FORMAT JSON) output.
func sharedBlocksRead(plan []byte) (int, error) {
	var out []struct {
		Plan struct {
			Read *int `json:"Shared Read Blocks"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal(plan, &out); err != nil {
		return 0, fmt.Errorf("read-ahead plan: %w", err)
	}
	if len(out) != 1 || out[0].Plan.Read == nil {
		return 0, fmt.Errorf("read-ahead plan without Shared Read Blocks: %.200s", plan)
	}
	return *out[0].Plan.Read, nil
}
