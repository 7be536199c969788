package postgres

import (
	"bytes"
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

	"github.com/coordinated/coordinated/coordinate"
)

// Reading ahead of claims. Claims take units in (priority, key) order,
// which is not the order they were added in, so in a queue much bigger
// than PostgreSQL's cache every claimed unit is a page read from disk, and
// a claim statement reads its pages one after another, nearly all of its
// time waiting for reads (docs/postgres.md, "Reading ahead of claims",
// has the measurements). After each
// big claim the backend reads, on another connection, the rows of the
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
	//go:embed queries/read_ahead_keys.sql
	readAheadKeysSQL string
	//go:embed queries/read_ahead_rows.sql
	readAheadRowsSQL string
)

const (
	// readAheadMin is the smallest claim (units, over all requests sharing
	// the statement) that starts reading ahead for a spec nobody read
	// ahead for yet; smaller claims read few enough pages that a
	// read-ahead's round trips would cost more.
	readAheadMin = 256
	// readAheadClaims is how many claims of the last one's size the
	// backend keeps read ahead.
	readAheadClaims = 2
	// readAheadWindow is the fewest units the backend keeps read ahead.
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

// unitPos is a unit's place in claim order.
type unitPos struct {
	priority float64
	key      []byte
}

// attemptPos is the place in claim order of a's unit.
func attemptPos(a *coordinate.Attempt) unitPos {
	return unitPos{priority: a.Priority, key: []byte(a.Key.Bytes)}
}

// after reports whether p comes after q in claim order.
func (p unitPos) after(q unitPos) bool {
	if p.priority != q.priority {
		return p.priority < q.priority
	}
	return bytes.Compare(p.key, q.key) > 0
}

// readAheadSpec is what the backend knows of one spec's read-ahead.
type readAheadSpec struct {
	running    bool
	frontier   unitPos   // the last unit read ahead
	ahead      int       // units read ahead of the claims (an estimate)
	quietUntil time.Time // no read-ahead before then: the units were cached
}

type readAhead struct {
	mu     sync.Mutex
	specs  map[int64]*readAheadSpec
	off    bool // the server refused the settings: never again
	closed bool // the backend is closing: start nothing
	wg     sync.WaitGroup
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

// queueHead is a position before every unit.
var queueHead = unitPos{priority: math.Inf(1)}

// claimingUnits tells the read-ahead that claims (one statement's, on one
// spec) are about to start. When nothing is known of the spec yet (its
// first big claim) it reads the units they ask for from the front of the
// queue alongside them: the claim walks their pages one by one while the
// read-ahead asks for all of them at once.
func (b *Backend) claimingUnits(claims []*claimRequest) {
	n := 0
	for _, cl := range claims {
		n += cl.n
	}
	if n < readAheadMin {
		return
	}
	spec := claims[0].spec.id
	ra := &b.readAhead
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if ra.off || ra.specs[spec] != nil {
		return
	}
	st := &readAheadSpec{frontier: queueHead}
	ra.specs[spec] = st
	b.startReadAhead(spec, st, n)
}

// claimedUnits tells the read-ahead how far claims (one statement's, on
// one spec) got, and starts a read-ahead of the spec's next units when
// fewer than readAheadClaims claims' worth (at least readAheadWindow units)
// are read ahead. Claims of any size count once a big claim or a warm
// started reading ahead for the spec.
func (b *Backend) claimedUnits(claims []*claimRequest) {
	n := 0
	for _, cl := range claims {
		n += len(cl.attempts)
	}
	if n == 0 {
		return
	}
	spec := claims[0].spec.id
	ra := &b.readAhead
	ra.mu.Lock()
	defer ra.mu.Unlock()
	st := ra.specs[spec]
	if ra.off || st == nil {
		return
	}
	// Each claim's attempts are in claim order: only the last ones compete.
	var last *coordinate.Attempt
	for _, cl := range claims {
		if k := len(cl.attempts); k > 0 {
			a := &cl.attempts[k-1]
			if last == nil || attemptPos(a).after(attemptPos(last)) {
				last = a
			}
		}
	}
	lastPos := attemptPos(last)
	if !st.frontier.after(lastPos) {
		// The claims caught up: read ahead from where they are.
		st.frontier, st.ahead = lastPos, 0
	} else {
		st.ahead = max(0, st.ahead-n)
	}
	want := max(readAheadClaims*n, readAheadWindow)
	if st.running || st.ahead >= want/2 || b.clock.Now().Before(st.quietUntil) {
		return
	}
	b.startReadAhead(spec, st, want-st.ahead)
}

// startReadAhead reads count units of spec after st's frontier in the
// background. The caller holds ra.mu.
func (b *Backend) startReadAhead(spec int64, st *readAheadSpec, count int) {
	ra := &b.readAhead
	if ra.closed {
		return
	}
	st.running = true
	from := st.frontier
	ra.runs.Add(1)
	ra.wg.Add(1)
	go func() {
		defer ra.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), readAheadTimeout)
		defer cancel()
		res, err := b.readAheadOnce(ctx, spec, from, count)
		ra.mu.Lock()
		defer ra.mu.Unlock()
		st.running = false
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr):
			ra.off = true
			b.log.Info("postgres backend: reading ahead of claims turned off", "err", err)
			return
		case err != nil:
			b.log.Debug("postgres backend: read-ahead failed", "spec_id", spec, "err", err)
			return
		case res.units == 0:
			delete(ra.specs, spec)
			return
		}
		if res.pagesRead*readAheadCached < res.units {
			st.quietUntil = b.clock.Now().Add(readAheadQuiet)
		}
		if res.end.after(st.frontier) {
			st.frontier = res.end
			st.ahead += res.units
		}
	}()
}

// readAheadResult is what one read-ahead did.
type readAheadResult struct {
	end       unitPos // the last unit read
	units     int     // units read
	pagesRead int     // pages read from outside shared_buffers
}

// readAheadOnce reads the rows of spec's next count units after from.
func (b *Backend) readAheadOnce(ctx context.Context, spec int64, from unitPos, count int) (readAheadResult, error) {
	var res readAheadResult
	rows, err := b.pool.Query(ctx, readAheadKeysSQL, spec, from.priority, from.key, count)
	if err != nil {
		return res, err
	}
	var keys [][]byte
	_, err = pgx.ForEachRow(rows, []any{&res.end.priority, &res.end.key}, func() error {
		keys = append(keys, res.end.key)
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
	if err := b.pool.SendBatch(ctx, batch).Close(); err != nil {
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
