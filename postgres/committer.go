package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/histo"
)

// The committer group-commits the hot operations: get_work claims and
// update_work_unit calls from every connection of this daemon. One
// goroutine takes everything queued while the previous transaction ran and
// applies it all in the next one, so one WAL flush answers many requests.
// Each request still gets its own result: claims never fail one another
// (SKIP LOCKED), finishes of held units take the fast path (finish.go),
// and other updates are validated one by one in Go from rows locked FOR
// UPDATE. A batch of claims and finishes is one pipelined round trip.

// batchTimeout bounds one batch's transaction, so a wedged database
// connection fails its requests instead of stalling every caller.
const batchTimeout = time.Minute

// maxCommitBatch caps how many requests share one transaction.
const maxCommitBatch = 512

// commitWorkers is how many transactions the committer keeps in flight:
// while one waits for its WAL flush, the next batch gathers and starts.
const commitWorkers = 2

// busyMinBatch is how many requests a batch gathers before it starts while
// another is in flight.
const busyMinBatch = 32

// genericPlans makes the statements of a committer transaction use their
// prepared statement's generic plan. They are prepared once per connection
// (pgx's statement cache) and written to reach their rows through indexes
// whatever the parameters; with PostgreSQL's default, the CTE statements
// were planned again on every execution, which cost several times their
// execution. Other queries keep custom plans (a status filter given as a
// parameter, say, only finds its partial index in a custom plan).
const genericPlans = "SET LOCAL plan_cache_mode = force_generic_plan"

// dbtx is what both a transaction and a connection inside one offer.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// claimRequest is one get_work lease step waiting for the committer.
type claimRequest struct {
	ns      *namespace
	spec    specRow
	n       int
	worker  coordinate.Name
	now     time.Time
	expires time.Time

	attempts []coordinate.Attempt // result
}

// commitItem is one queued request: a claim or an update.
type commitItem struct {
	claim *claimRequest
	upd   *updateRequest
	done  chan error
}

type committer struct {
	b       *Backend
	queue   chan *commitItem
	stop    chan struct{}
	stopped sync.WaitGroup
	// busy counts the workers applying a batch; freed is signalled when
	// one finishes.
	busy  atomic.Int32
	freed chan struct{}

	// fast and fellThrough count the updates the fast finish path applied
	// and those it handed to the general path (read by tests).
	fast, fellThrough atomic.Int64

	batches *histo.Histogram // requests per batch, for metrics (stats.go)
}

func newCommitter(b *Backend) *committer {
	c := &committer{b: b, queue: make(chan *commitItem, 4*maxCommitBatch), stop: make(chan struct{}),
		freed: make(chan struct{}, 1), batches: newCommitBatchHistogram()}
	c.stopped.Add(commitWorkers)
	for range commitWorkers {
		go c.run()
	}
	return c
}

func (c *committer) close() {
	close(c.stop)
	c.stopped.Wait()
}

var errBackendClosed = errors.New("postgres backend closed")

// submit queues it and waits for its result.
func (c *committer) submit(ctx context.Context, it *commitItem) error {
	it.done = make(chan error, 1)
	select {
	case c.queue <- it:
	case <-c.stop:
		return errBackendClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-it.done:
		return err
	case <-ctx.Done():
		// The request may still be applied; the caller stops waiting.
		return ctx.Err()
	}
}

func (c *committer) run() {
	defer c.stopped.Done()
	batch := make([]*commitItem, 0, maxCommitBatch)
	for {
		select {
		case <-c.stop:
			c.drain()
			return
		case it := <-c.queue:
			batch = append(batch[:0], it)
		}
		if !c.gather(&batch) {
			for _, it := range batch {
				it.done <- errBackendClosed
			}
			c.drain()
			return
		}
		c.busy.Add(1)
		c.batches.Observe(float64(len(batch)))
		c.apply(batch)
		c.busy.Add(-1)
		select {
		case c.freed <- struct{}{}:
		default:
		}
	}
}

// gather adds what is queued to batch. While another worker's batch is in
// flight it waits for busyMinBatch requests or for that batch to end:
// small batches cost nearly as much as big ones, so under load a second
// transaction only starts when it is worth one. (Waiting for as many as
// the batch in flight holds, at most busyMinBatch, measured about 7%
// slower at 64 connections; 8, 16, 48 and 64 did no better than 32.) It
// reports false when the committer is stopping.
func (c *committer) gather(batch *[]*commitItem) bool {
	for len(*batch) < maxCommitBatch {
		select {
		case it := <-c.queue:
			*batch = append(*batch, it)
			continue
		default:
		}
		if c.busy.Load() == 0 || len(*batch) >= busyMinBatch {
			return true
		}
		select {
		case it := <-c.queue:
			*batch = append(*batch, it)
		case <-c.freed:
		case <-c.stop:
			return false
		}
	}
	return true
}

// drain fails the requests still queued at close.
func (c *committer) drain() {
	for {
		select {
		case it := <-c.queue:
			it.done <- errBackendClosed
		default:
			return
		}
	}
}

// apply commits one batch and answers every request. A transaction that
// fails for concurrency reasons is rerun; one that fails otherwise is
// split so only the request at fault gets the error. Updates the fast
// finish path did not match are applied by the general path in a
// transaction of their own after this one.
func (c *committer) apply(batch []*commitItem) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	results := make([]error, len(batch))
	var (
		out batchOutcome
		err error
	)
	for attempt := 0; ; attempt++ {
		out, err = c.runBatch(ctx, batch, results)
		if err == nil || !retryable(err) || attempt >= 10 {
			break
		}
	}
	if err != nil && len(batch) > 1 {
		for _, it := range batch {
			c.apply([]*commitItem{it})
		}
		return
	}
	if err == nil {
		c.fast.Add(int64(out.fast))
		claimed := 0
		for _, it := range batch {
			if it.claim != nil {
				claimed += len(it.claim.attempts)
			}
		}
		c.b.noteClaimed(claimed)
	}
	var rest []*commitItem
	for i, it := range batch {
		switch {
		case err != nil:
			it.done <- fmt.Errorf("postgres commit: %w", err)
		case out.again[i]:
			c.fellThrough.Add(1)
			it.upd.slow = true
			rest = append(rest, it)
		default:
			it.done <- results[i]
		}
	}
	if len(rest) > 0 {
		c.apply(rest)
	}
}

// batchOutcome is what runBatch reports besides each request's result.
type batchOutcome struct {
	again []bool // by batch index: updates left to run through the general path
	fast  int    // updates the fast path applied
}

// runBatch runs the batch in one transaction on one connection.
//
// Round trip 1 sends BEGIN, every claim, the fast finishes and, when some
// updates need the general path, the statement locking their units; with
// none, it ends with COMMIT. Otherwise round trip 2 sends those updates'
// writes and COMMIT (with chaining or failures, statements of their own
// run before COMMIT).
func (c *committer) runBatch(ctx context.Context, batch []*commitItem, results []error) (out batchOutcome, err error) {
	conn, err := c.b.pool.Acquire(ctx)
	if err != nil {
		return out, err
	}
	defer conn.Release()
	inTx := false
	defer func() {
		if err != nil && inTx {
			if _, rbErr := conn.Exec(ctx, "ROLLBACK"); rbErr != nil {
				conn.Conn().Close(ctx) //nolint:errcheck // the pool drops a closed connection
			}
		}
	}()

	var claims []*claimRequest
	var updates []*updateRequest
	var updIdx []int
	for i, it := range batch {
		results[i] = nil
		if it.claim != nil {
			it.claim.attempts = nil
			claims = append(claims, it.claim)
		} else {
			updates = append(updates, it.upd)
			updIdx = append(updIdx, i)
		}
	}
	fast, slowIdx := splitFast(updates)
	slow := make([]*updateRequest, len(slowIdx))
	for j, i := range slowIdx {
		slow[j] = updates[i]
	}

	first := &pgx.Batch{}
	first.Queue("BEGIN")
	first.Queue(genericPlans)
	claimGroups := groupClaims(claims)
	for _, grp := range claimGroups {
		queueClaims(first, grp)
		c.b.claimingUnits(grp)
	}
	if len(fast.reqs) > 0 {
		fast.queue(first, updates)
	}
	if len(slow) > 0 {
		queueLockUnits(first, slow)
	} else {
		first.Queue("COMMIT")
	}
	br := conn.SendBatch(ctx, first)
	inTx = true
	fail := func(err error) (batchOutcome, error) {
		br.Close()
		return batchOutcome{}, err
	}
	for range 2 { // BEGIN, genericPlans
		if _, err := br.Exec(); err != nil {
			return fail(err)
		}
	}
	for _, grp := range claimGroups {
		rows, err := br.Query()
		if err == nil {
			err = collectClaims(rows, grp)
		}
		if err != nil {
			return fail(err)
		}
		c.b.claimedUnits(grp)
	}
	out.again = make([]bool, len(batch))
	if len(fast.reqs) > 0 {
		done, err := fast.read(br, len(updates))
		if err != nil {
			return fail(err)
		}
		for _, i := range fast.reqs {
			if done[i] {
				out.fast++
			} else {
				out.again[updIdx[i]] = true
			}
		}
	}
	if len(slow) == 0 {
		if _, err := br.Exec(); err != nil { // COMMIT
			return fail(err)
		}
		if err := br.Close(); err != nil {
			return batchOutcome{}, err
		}
		inTx = false
		return out, nil
	}
	rows, err := br.Query()
	if err != nil {
		return fail(err)
	}
	locked, err := scanLockedUnits(rows)
	if err != nil {
		return fail(err)
	}
	if err := br.Close(); err != nil {
		return batchOutcome{}, err
	}

	// The general path's transitions, computed in Go; then round trip 2:
	// the writes and, unless chaining or failures must follow them, COMMIT.
	second := &pgx.Batch{}
	slowResults := make([]error, len(slow))
	after, err := applyUpdates(ctx, conn, slow, locked, slowResults, second)
	if err != nil {
		return batchOutcome{}, err
	}
	for j, i := range slowIdx {
		results[updIdx[i]] = slowResults[j]
	}
	if after.empty() {
		second.Queue("COMMIT")
		if err := conn.SendBatch(ctx, second).Close(); err != nil {
			return batchOutcome{}, err
		}
	} else {
		if err := conn.SendBatch(ctx, second).Close(); err != nil {
			return batchOutcome{}, err
		}
		if err := after.run(ctx, conn); err != nil {
			return batchOutcome{}, err
		}
		if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
			return batchOutcome{}, err
		}
	}
	inTx = false
	return out, nil
}

// groupClaims puts together the claims on the same spec, so one statement
// serves them all; claims on a spec with max_running stay alone (their
// counts were computed separately).
func groupClaims(claims []*claimRequest) [][]*claimRequest {
	var out [][]*claimRequest
	bySpec := map[int64]int{}
	for _, cl := range claims {
		if i, ok := bySpec[cl.spec.id]; ok && cl.spec.spec.Meta.MaxRunning == 0 {
			out[i] = append(out[i], cl)
			continue
		}
		bySpec[cl.spec.id] = len(out)
		out = append(out, []*claimRequest{cl})
	}
	return out
}

// queueClaims queues the statement leasing the units of claims on one
// spec: claim.sql for one, claim_many.sql for several.
func queueClaims(b *pgx.Batch, claims []*claimRequest) {
	cl := claims[0]
	if len(claims) == 1 {
		b.Queue(claimSQL, cl.spec.id, cl.now.UnixNano(), cl.n, cl.expires.UnixNano(),
			bytesOf(cl.worker.Bytes), cl.worker.Text, cl.ns.id)
		return
	}
	var (
		workers  [][]byte
		texts    []bool
		expires  []int64
		reqs     []int32
		earliest = cl.now
	)
	for i, c := range claims {
		if c.now.Before(earliest) {
			earliest = c.now
		}
		for range c.n {
			workers = append(workers, bytesOf(c.worker.Bytes))
			texts = append(texts, c.worker.Text)
			expires = append(expires, c.expires.UnixNano())
			reqs = append(reqs, int32(i))
		}
	}
	b.Queue(claimManySQL, cl.spec.id, earliest.UnixNano(), workers, texts, expires, reqs, cl.ns.id)
}

// collectClaims reads the units leased by queueClaims into the claims,
// each in priority-then-key order.
func collectClaims(rows pgx.Rows, claims []*claimRequest) error {
	var (
		req     int32
		key     []byte
		keyText bool
		data    []byte
		prio    float64
		leaseID int64
	)
	_, err := pgx.ForEachRow(rows, []any{&req, &key, &keyText, &data, &prio, &leaseID}, func() error {
		cl := claims[req]
		k := coordinate.Name{Bytes: string(key), Text: keyText}
		cl.attempts = append(cl.attempts, coordinate.Attempt{
			Spec: cl.spec.spec.Name, Key: k, Data: append([]byte(nil), data...), Priority: prio,
			Worker: cl.worker, Expires: cl.expires, ID: leaseID,
		})
		return nil
	})
	if err != nil {
		return err
	}
	for _, cl := range claims {
		sort.Slice(cl.attempts, func(i, j int) bool {
			a, b := cl.attempts[i], cl.attempts[j]
			if a.Priority != b.Priority {
				return a.Priority > b.Priority
			}
			return a.Key.Bytes < b.Key.Bytes
		})
	}
	return nil
}
