package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"coordinated/coordinate"
)

// The committer group-commits the hot operations: get_work claims and
// update_work_unit calls from every connection of this daemon. One
// goroutine takes everything queued while the previous transaction ran and
// applies it all in the next one, so one WAL flush answers many requests.
// Each request still gets its own result: claims never fail one another
// (SKIP LOCKED), and updates are validated one by one in Go from rows
// locked FOR UPDATE. A transaction is three pipelined round trips: BEGIN +
// claims + locking the updated units; the writes + COMMIT.

// batchTimeout bounds one batch's transaction, so a wedged database
// connection fails its requests instead of stalling every caller.
const batchTimeout = time.Minute

// maxCommitBatch caps how many requests share one transaction.
const maxCommitBatch = 512

// commitWorkers is how many transactions the committer keeps in flight:
// while one waits for its WAL flush, the next batch gathers and starts.
const commitWorkers = 2

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
}

func newCommitter(b *Backend) *committer {
	c := &committer{b: b, queue: make(chan *commitItem, 4*maxCommitBatch), stop: make(chan struct{})}
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
	gather:
		for len(batch) < maxCommitBatch {
			select {
			case it := <-c.queue:
				batch = append(batch, it)
			default:
				break gather
			}
		}
		c.apply(batch)
	}
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
// split so only the request at fault gets the error.
func (c *committer) apply(batch []*commitItem) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	results := make([]error, len(batch))
	var err error
	for attempt := 0; ; attempt++ {
		err = c.runBatch(ctx, batch, results)
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
	for i, it := range batch {
		if err != nil {
			it.done <- fmt.Errorf("postgres commit: %w", err)
		} else {
			it.done <- results[i]
		}
	}
}

// runBatch runs the batch in one transaction on one connection.
func (c *committer) runBatch(ctx context.Context, batch []*commitItem, results []error) (err error) {
	conn, err := c.b.pool.Acquire(ctx)
	if err != nil {
		return err
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

	// Round trip 1: BEGIN, every claim, and locking the units to update.
	first := &pgx.Batch{}
	first.Queue("BEGIN")
	claimGroups := groupClaims(claims)
	for _, grp := range claimGroups {
		queueClaims(first, grp)
	}
	if len(updates) > 0 {
		queueLockUnits(first, updates)
	} else {
		first.Queue("COMMIT") // claims only: one round trip
	}
	br := conn.SendBatch(ctx, first)
	inTx = true
	if _, err := br.Exec(); err != nil {
		br.Close()
		return err
	}
	for _, grp := range claimGroups {
		rows, err := br.Query()
		if err == nil {
			err = collectClaims(rows, grp)
		}
		if err != nil {
			br.Close()
			return err
		}
	}
	var locked *lockedUnits
	if len(updates) > 0 {
		rows, err := br.Query()
		if err == nil {
			locked, err = scanLockedUnits(rows)
		}
		if err != nil {
			br.Close()
			return err
		}
	}
	if len(updates) == 0 {
		if _, err := br.Exec(); err != nil { // COMMIT
			br.Close()
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		inTx = false
		return nil
	}
	if err := br.Close(); err != nil {
		return err
	}

	// The update transitions, computed in Go; then round trip 2: the
	// writes and, unless chaining or failures must follow them, COMMIT.
	second := &pgx.Batch{}
	var after *afterUpdates
	if len(updates) > 0 {
		updResults := make([]error, len(updates))
		after, err = applyUpdates(ctx, conn, updates, locked, updResults, second)
		if err != nil {
			return err
		}
		for j, i := range updIdx {
			results[i] = updResults[j]
		}
	}
	if after == nil || after.empty() {
		second.Queue("COMMIT")
		if err := conn.SendBatch(ctx, second).Close(); err != nil {
			return err
		}
	} else {
		if err := conn.SendBatch(ctx, second).Close(); err != nil {
			return err
		}
		if err := after.run(ctx, conn); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
			return err
		}
	}
	inTx = false
	return nil
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
	if len(claims) == 1 {
		cl := claims[0]
		as, err := collectAttempts(rows, cl.spec.spec.Name, cl.worker, cl.expires)
		if err != nil {
			return err
		}
		cl.attempts = as
	} else {
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
			cl.attempts = append(cl.attempts, coordinate.Attempt{
				Spec: cl.spec.spec.Name, Key: coordinate.Name{Bytes: string(key), Text: keyText},
				Data: append([]byte(nil), data...), Priority: prio, Worker: cl.worker, Expires: cl.expires, ID: leaseID,
			})
			return nil
		})
		if err != nil {
			return err
		}
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
