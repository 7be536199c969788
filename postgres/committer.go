package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

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
// pipeline.go is a batch's transaction, stage by stage; this file queues,
// gathers, retries and answers.

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

// idleGather bounds how long a batch that could start at once (nothing
// in flight) waits for the requests recent batches suggest are on their
// way; recentBatches is how many recent batch sizes suggest it. Only a
// handful of callers is waited for (idleGatherMost): with more, a batch
// is nearly always in flight, requests arrive faster than the wait, and
// the committer keeps its rule for that case.
const (
	idleGather     = 250 * time.Microsecond
	recentBatches  = 4
	idleGatherMost = 16
)

// genericPlans makes the statements of a committer transaction use their
// prepared statement's generic plan. They are prepared once per connection
// (pgx's statement cache) and written to reach their rows through indexes
// whatever the parameters; with PostgreSQL's default, the CTE statements
// were planned again on every execution, which cost several times their
// execution. Other queries keep custom plans (a status filter given as a
// parameter, say, only finds its partial index in a custom plan).
const genericPlans = "SET LOCAL plan_cache_mode = force_generic_plan"

// claimsOnly lets a transaction that only leases units commit without
// waiting for its WAL flush. docs/spec/PERSISTENCE.md section 3: every
// acknowledged change survives a crash except get_work's leases, which may
// be lost and then behave as expired ones (the memory backend writes them
// without waiting for its fsync). A lease lost so comes back AVAILABLE;
// the finish of its unit is refused as for an expired lease. Anything
// committed later waits for its own flush, which covers every earlier
// record, so a finish can never be durable while the lease it ends is not.
const claimsOnly = "SET LOCAL synchronous_commit = off"

// implicitGenericPlans and implicitClaimsOnly make the same settings as
// genericPlans and genericPlans plus claimsOnly, for an implicit
// transaction (implicitSettings, pipeline.go), in one statement each:
// set_config with is_local, since SET LOCAL outside BEGIN warns on every
// batch. Explicit transactions keep SET LOCAL: moving them to set_config
// too measured 1.5-4% slower (drain1, weighted; docs/postgres.md, "Sixth
// pass: the finish's CPU").
const (
	implicitGenericPlans = "SELECT set_config('plan_cache_mode', 'force_generic_plan', true)"
	implicitClaimsOnly   = implicitGenericPlans + ", set_config('synchronous_commit', 'off', true)"
)

// dbtx is what both a transaction and a connection inside one offer.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// claimRequest is one get_work lease step waiting for the committer.
type claimRequest struct {
	ns   *namespace
	spec specRow
	n    int
	// maxBytes bounds the leased units' data (coordinate.WithinBytes);
	// a claim of several units with a bound runs claim.sql alone.
	maxBytes int64
	worker   coordinate.Name
	now      time.Time
	expires  time.Time

	attempts []coordinate.Attempt // result
}

// commitItem is one queued request: a get_work (read, choose and claim:
// schedclaims.go), a claim of a chosen spec, or an update.
type commitItem struct {
	get   *getRequest
	claim *claimRequest
	upd   *updateRequest
	done  chan error
	// state settles who has the result: the submitter, or nobody because
	// the submitter gave up first (itemWaiting -> itemAnswered or
	// itemAbandoned, once).
	state atomic.Int32
}

const (
	itemWaiting int32 = iota
	itemAnswered
	itemAbandoned
)

type committer struct {
	b       *Backend
	queue   chan *commitItem
	lanes   chan laneJob // apply's claims lanes, for the lane goroutines
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

	gathering sync.Mutex // held by the worker taking requests off queue
	// want is how many more queued requests the gathering worker waits
	// for (0: none); arrived signals enough once the queue holds them.
	want   atomic.Int32
	enough chan struct{} // capacity 1
	// idleWait is idleGather (tests change it).
	idleWait time.Duration

	// recent holds the sizes of the last recentBatches batches started,
	// next the slot the next one goes to (gather).
	recentMu sync.Mutex
	recent   [recentBatches]int
	next     int
}

func newCommitter(b *Backend) *committer {
	c := &committer{b: b, queue: make(chan *commitItem, 4*maxCommitBatch), lanes: make(chan laneJob), stop: make(chan struct{}),
		freed: make(chan struct{}, 1), enough: make(chan struct{}, 1), batches: newCommitBatchHistogram(), idleWait: idleGather}
	c.stopped.Add(2 * commitWorkers)
	for range commitWorkers {
		go c.run()
		go c.lane()
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
	if err := c.push(ctx, it); err != nil {
		return err
	}
	select {
	case err := <-it.done:
		return err
	case <-ctx.Done():
		if !it.state.CompareAndSwap(itemWaiting, itemAbandoned) {
			return <-it.done // answered meanwhile: the result stands
		}
		// The request may still be applied; a claim's leases are then
		// released (answer).
		return ctx.Err()
	}
}

// push queues it. It fails, leaving it unqueued, when the committer is
// closed or ctx ends first.
func (c *committer) push(ctx context.Context, it *commitItem) error {
	select {
	case c.queue <- it:
		c.arrived()
	case <-c.stop:
		return errBackendClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// Queued as the committer closed: its workers may have drained the
	// queue and gone already. Whatever is still queued is answered here,
	// so no queued request is left without an answer.
	select {
	case <-c.stop:
		c.drain()
	default:
	}
	return nil
}

// answer hands a request its result. A claim whose submitter gave up has
// leased units nobody will be told about: they are released at once.
func (c *committer) answer(it *commitItem, err error) {
	if it.state.CompareAndSwap(itemWaiting, itemAnswered) {
		it.done <- err
		return
	}
	if cl := it.claimed(); err == nil && cl != nil && len(cl.attempts) > 0 {
		go c.release(cl) // not on a committer worker: it submits to the committer
	}
}

// claimed is the claim the item made, if any.
func (it *commitItem) claimed() *claimRequest {
	if it.get != nil {
		return it.get.claim
	}
	return it.claim
}

// release makes the units of an abandoned claim available again.
func (c *committer) release(cl *claimRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	for _, a := range cl.attempts {
		id := a.ID
		err := c.submit(ctx, &commitItem{upd: &updateRequest{ns: cl.ns, spec: a.Spec.Bytes, key: a.Key.Bytes,
			upd: coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable}, leaseID: &id, now: cl.ns.now()}})
		if err != nil && !errors.Is(err, coordinate.ErrLostLease) {
			c.b.log.Warn("postgres get_work: the caller gave up; its unit stays leased until the lease ends",
				"work_spec", a.Spec.Bytes, "work_unit", a.Key.Bytes, "err", err)
		}
	}
}

func (c *committer) run() {
	defer c.stopped.Done()
	batch := make([]*commitItem, 0, maxCommitBatch)
	for {
		// One worker gathers at a time, so a batch waiting for more
		// requests (gather) does not share them with the other worker's.
		c.gathering.Lock()
		select {
		case <-c.stop:
			c.gathering.Unlock()
			c.drain()
			return
		case it := <-c.queue:
			batch = append(batch[:0], it)
		}
		ok := c.gather(&batch)
		c.gathering.Unlock()
		if !ok {
			for _, it := range batch {
				c.answer(it, errBackendClosed)
			}
			c.drain()
			return
		}
		c.started(len(batch))
		if batch = dropAbandoned(batch); len(batch) == 0 {
			continue
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

// dropAbandoned removes the get_work requests and claims whose callers
// gave up while they were queued: nobody would be told about their leases
// (a frozen database's get_work calls would otherwise lease units once it
// answers again, only to release them). Updates are applied: their
// callers were told they may be.
func dropAbandoned(batch []*commitItem) []*commitItem {
	kept := batch[:0]
	for _, it := range batch {
		if it.upd == nil && it.state.Load() == itemAbandoned {
			continue
		}
		kept = append(kept, it)
	}
	return kept
}

// gather adds what is queued to batch. While another worker's batch is in
// flight it waits for busyMinBatch requests or for that batch to end:
// small batches cost nearly as much as big ones, so under load a second
// transaction only starts when it is worth one. (Waiting for as many as
// the batch in flight holds, at most busyMinBatch, measured about 7%
// slower at 64 connections; 8, 16, 48 and 64 did no better than 32.)
// With nothing in flight it waits, at most idleGather from when it saw
// nothing in flight (the callers of the batch that ended then are only
// starting their next requests), until it holds as many requests as the
// biggest of the recent batches, if that is a handful (expected): their
// callers, each with one request at a time, are sending their next ones,
// and a batch started on the first of them would make the rest wait for
// a whole transaction and flush. It reports false when the committer is
// stopping.
func (c *committer) gather(batch *[]*commitItem) bool {
	var (
		expect = c.expected()
		idle   time.Time // when gather first saw nothing in flight
		timer  *time.Timer
		late   <-chan time.Time
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for len(*batch) < maxCommitBatch {
		select {
		case it := <-c.queue:
			*batch = append(*batch, it)
			continue
		default:
		}
		busy := c.busy.Load() > 0
		if busy {
			if len(*batch) >= busyMinBatch {
				return true
			}
		} else {
			if len(*batch) >= expect {
				return true
			}
			if timer == nil {
				idle = time.Now()
				timer = time.NewTimer(c.idleWait)
				late = timer.C
			} else if time.Since(idle) >= c.idleWait {
				return true
			}
		}
		// With nothing in flight, sleep until the queue holds the
		// requests waited for (arrived), not once per request: at 8
		// connections that was a wake of this goroutine per request.
		// While a batch is in flight, take each request as it comes, as
		// before (they join this batch either way; TestGetWorksShareABatch
		// watches them leave the queue).
		need := int32(expect - len(*batch))
		if busy {
			need = 1
		}
		c.want.Store(need)
		if len(c.queue) >= int(need) {
			c.want.Store(0)
			continue
		}
		select {
		case <-c.enough:
		case <-c.freed:
		case <-late:
			c.want.Store(0)
			return true
		case <-c.stop:
			c.want.Store(0)
			return false
		}
		c.want.Store(0)
	}
	return true
}

// arrived is called after a request is queued: it wakes the gathering
// worker when the queue holds as many requests as it waits for.
func (c *committer) arrived() {
	if w := c.want.Load(); w > 0 && len(c.queue) >= int(w) {
		select {
		case c.enough <- struct{}{}:
		default:
		}
	}
}

// started records the size of a batch about to start.
func (c *committer) started(n int) {
	c.recentMu.Lock()
	c.recent[c.next] = n
	c.next = (c.next + 1) % recentBatches
	c.recentMu.Unlock()
}

// expected is how many requests gather waits for with nothing in flight:
// the size of the biggest recent batch, or 1 (none) when that is more
// than idleGatherMost.
func (c *committer) expected() int {
	c.recentMu.Lock()
	defer c.recentMu.Unlock()
	if n := slices.Max(c.recent[:]); n <= idleGatherMost {
		return max(1, n)
	}
	return 1
}

// drain fails the requests still queued at close.
func (c *committer) drain() {
	for {
		select {
		case it := <-c.queue:
			c.answer(it, errBackendClosed)
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
	claims, updates := splitLanes(batch)
	if len(claims) == 0 || len(updates) == 0 {
		c.applyLane(batch)
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	select {
	case c.lanes <- laneJob{claims, &wg}:
	case <-c.stop:
		go c.runLane(laneJob{claims, &wg})
	}
	c.applyLane(updates)
	wg.Wait()
}

// laneJob is the claims lane of a batch apply runs on a lane goroutine.
type laneJob struct {
	batch []*commitItem
	done  *sync.WaitGroup
}

// lane runs the claims lanes of batches (apply) until the committer
// stops. It lives as long as the committer: a goroutine started per
// batch grew its stack to pgx's depth on every batch, about 5% of the
// daemon's CPU at 8 connections (docs/postgres.md, "Fourth pass: the
// daemon's CPU per unit").
func (c *committer) lane() {
	defer c.stopped.Done()
	for {
		select {
		case j := <-c.lanes:
			c.runLane(j)
		case <-c.stop:
			return
		}
	}
}

func (c *committer) runLane(j laneJob) {
	defer j.done.Done()
	c.applyLane(j.batch)
}

// splitLanes separates a batch's claims (and get_work requests) from its
// updates. The two run as
// transactions of their own, side by side on two connections: a claim
// only leases units, which PostgreSQL need not flush before it is
// answered (claimsOnly), while updates wait for their WAL flush.
func splitLanes(batch []*commitItem) (claims, updates []*commitItem) {
	for _, it := range batch {
		if it.upd == nil {
			claims = append(claims, it)
		} else {
			updates = append(updates, it)
		}
	}
	return claims, updates
}

// applyLane commits one lane's batch (only claims, only updates, or a
// single request) and answers every request.
func (c *committer) applyLane(batch []*commitItem) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	ctx, end := c.b.live.watch(ctx) // liveness.go
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
	err = end(err)
	if err != nil && len(batch) > 1 && !errors.Is(err, coordinate.ErrUnavailable) {
		for _, it := range batch {
			c.applyLane([]*commitItem{it})
		}
		return
	}
	if err == nil {
		c.fast.Add(int64(out.fast))
		c.b.events.committed(out.events)
		freedSlots(batch, results, out.again, &out.ready) // workready.go
		c.b.workReady.ready(out.ready)
		claimed := 0
		for _, it := range batch {
			if cl := it.claimed(); cl != nil {
				claimed += len(cl.attempts)
			}
		}
		c.b.cache.committed(claimed)
	}
	var rest []*commitItem
	for i, it := range batch {
		switch {
		case err != nil:
			c.answer(it, fmt.Errorf("postgres commit: %w", err))
		case out.again[i]:
			c.fellThrough.Add(1)
			it.upd.slow = true
			rest = append(rest, it)
		default:
			c.answer(it, results[i])
		}
	}
	if len(rest) > 0 {
		c.applyLane(rest)
	}
}

// groupClaims puts together the claims on the same spec, so one statement
// serves them all; claims on a spec with max_running stay alone (their
// counts were computed separately), and so do claims of several units
// bounded by bytes (claim_many.sql counts units, not bytes).
func groupClaims(claims []*claimRequest) [][]*claimRequest {
	var out [][]*claimRequest
	bySpec := map[int64]int{}
	for _, cl := range claims {
		if i, ok := bySpec[cl.spec.id]; ok && cl.spec.spec.Meta.MaxRunning == 0 && !cl.byteBounded() && !out[i][0].byteBounded() {
			out[i] = append(out[i], cl)
			continue
		}
		bySpec[cl.spec.id] = len(out)
		out = append(out, []*claimRequest{cl})
	}
	return out
}

// byteBounded reports whether the claim's byte bound can cut it short.
func (cl *claimRequest) byteBounded() bool { return cl.maxBytes > 0 && cl.n > 1 }

// queueClaims queues the statement leasing the units of claims on one
// spec: claim.sql for one, claim_many.sql for several.
func queueClaims(b *pgx.Batch, claims []*claimRequest) {
	sql, args := claimStatement(claims)
	b.Queue(sql, args...)
}

// claimStatement is queueClaims's statement and its arguments.
func claimStatement(claims []*claimRequest) (string, []any) {
	cl := claims[0]
	if len(claims) == 1 {
		sql := claimSQL
		if cl.capped() {
			sql = claimCappedSQL // maxrunning.go
		}
		return sql, []any{cl.spec.id, cl.now.UnixNano(), cl.n, cl.expires.UnixNano(),
			bytesOf(cl.worker.Bytes), cl.worker.Text, cl.ns.id, max(0, cl.maxBytes)}
	}
	var (
		workers  []string // bytea[], as strings (pgarrays.go)
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
			workers = append(workers, c.worker.Bytes)
			texts = append(texts, c.worker.Text)
			expires = append(expires, c.expires.UnixNano())
			reqs = append(reqs, int32(i))
		}
	}
	return claimManySQL, []any{cl.spec.id, earliest.UnixNano(), workers, texts, expires, reqs, cl.ns.id}
}

// collectClaims reads the units leased by queueClaims into the claims,
// each in priority-then-key order. A row with req -1 is a guarded
// claim's mark that its guard held (schedguess.go): marked says whether
// there was one.
func collectClaims(rows pgx.Rows, claims []*claimRequest) (marked bool, err error) {
	var (
		req     int32
		key     pgtype.DriverBytes // the row's own bytes, copied once below
		keyText bool
		data    pgtype.DriverBytes
		prio    float64
		leaseID int64
	)
	_, err = pgx.ForEachRow(rows, []any{&req, &key, &keyText, &data, &prio, &leaseID}, func() error {
		if req < 0 {
			marked = true
			return nil
		}
		cl := claims[req]
		k := coordinate.Name{Bytes: string(key), Text: keyText}
		cl.attempts = append(cl.attempts, coordinate.Attempt{
			Spec: cl.spec.spec.Name, Key: k, Data: append([]byte(nil), data...), Priority: prio,
			Worker: cl.worker, Expires: cl.expires, ID: leaseID,
		})
		return nil
	})
	if err != nil {
		return false, err
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
	return marked, nil
}
