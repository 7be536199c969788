package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The life of a hot request (get_work's claim, update_work_unit) after
// the committer (committer.go) put it in a batch with others, top to
// bottom, in one transaction on one connection:
//
//  0. Schedule (schedule), for a batch with get_work requests: BEGIN and
//     the scheduler's reads in one round trip, then each request's spec
//     chosen in Go (schedclaims.go); their claims join the batch's. A
//     request whose filter last read one spec to choose skips this stage:
//     its claim of that spec, guarded, goes in round trip 1
//     (schedguess.go's planGuesses).
//  1. Plan (planBatch): split the batch into get_work requests, claims,
//     updates the fast finish statement may apply (finish.go's
//     fastFinishable) and the rest, which the general path computes in Go.
//  2. Fast statements, round trip 1 (queueFirstTrip, readFirstTrip):
//     BEGIN; for a batch of claims alone, synchronous_commit off (a
//     lease need not be flushed before it is answered; the committer
//     runs a mixed batch's claims and updates as two transactions side
//     by side, committer.apply); the max_running locks of capped specs (maxrunning.go); every
//     claim (claim.sql, claim_many.sql); finish.sql and finish_chain.sql for the fast finishes
//     and the resolution of edges to what it finished; and either COMMIT
//     (nothing for the general path: the request is done here) or the
//     statement locking the general path's units FOR UPDATE. A round
//     trip that is the whole transaction (no stage 0, no general path,
//     no guessed claims) sends neither BEGIN nor COMMIT: the pipeline's
//     statements up to its Sync are one implicit transaction, which
//     PostgreSQL commits at the Sync, waiting for the flush as COMMIT
//     would (implicitSettings).
//  3. Lock and compute (compute): coordinate.ApplyUpdate on each locked
//     unit (update.go's applyUpdates), queueing the writes: units,
//     outstanding sets, dependency edges, unit_count, groups.
//  4. Side effects (update.go's afterUpdates): chaining, failing and
//     re-blocking dependents, in statements of their own when there are
//     any.
//  5. Commit: round trip 2 sends the writes and COMMIT together when there
//     are no side effects; otherwise the writes, the side effects (for
//     chaining, one lookup of the target specs and one add per target
//     spec: chains.go), then the side effects' counts with COMMIT.
//
// The committer answers each request from results; a fast finish the
// statement did not match comes back in the outcome's again and runs
// through the general path in the next batch (committer.apply).

// batchOutcome is what runBatch reports besides each request's result.
type batchOutcome struct {
	again []bool // by batch index: updates left to run through the general path
	fast  int    // updates the fast path applied
	// events are the batch's unit transitions, counted once it commits
	// (events.go).
	events specEvents
	// ready are the namespaces where finishes unblocked dependents: their
	// work listeners are called once it commits (workready.go).
	ready []int64
}

// batchPlan is stage 1: the batch taken apart.
type batchPlan struct {
	gets        []*getRequest // get_work requests: read and choose first (stage 0)
	guesses     []guessStmt   // get_work requests claiming without the read (schedguess.go)
	begun       bool          // stage 0 began the transaction
	implicit    bool          // round trip 1 is the whole transaction, without BEGIN and COMMIT
	settings    int           // statements before the claims in round trip 1
	claims      []*claimRequest
	claimGroups [][]*claimRequest // claims one statement serves together
	updates     []*updateRequest
	updIdx      []int // updates[j] is batch[updIdx[j]]
	fast        fastFinishes
	slowIdx     []int            // indexes into updates
	slow        []*updateRequest // updates for the general path
	locks       int              // max_running locks queued
}

func planBatch(batch []*commitItem, results []error) *batchPlan {
	p := &batchPlan{}
	for i, it := range batch {
		results[i] = nil
		switch {
		case it.get != nil:
			it.get.item = it
			p.gets = append(p.gets, it.get)
		case it.claim != nil:
			it.claim.attempts = nil
			p.claims = append(p.claims, it.claim)
		default:
			p.updates = append(p.updates, it.upd)
			p.updIdx = append(p.updIdx, i)
		}
	}
	p.fast, p.slowIdx = splitFast(p.updates)
	p.slow = make([]*updateRequest, len(p.slowIdx))
	for j, i := range p.slowIdx {
		p.slow[j] = p.updates[i]
	}
	return p
}

// schedule is stage 0, for a batch with get_work requests: BEGIN, the
// settings, and the scheduler's reads (schedclaims.go), one round trip;
// then the choice of each request's claim in Go.
//
// A read that missed (a row sent without its settings at a version the
// daemon has not decoded: specrows.go) is made again with every row's
// settings, in a round trip of its own in the same transaction, before
// anything is chosen.
func (p *batchPlan) schedule(ctx context.Context, conn *pgxpool.Conn) error {
	reads := newSchedReads(p.gets)
	b, settings := p.queueSchedule(reads)
	p.begun = true
	if err := sendReads(ctx, conn, b, settings, reads); err != nil {
		return err
	}
	if len(reads.missed) > 0 {
		reads.all = true
		b := &pgx.Batch{}
		reads.queue(b)
		if err := sendReads(ctx, conn, b, 0, reads); err != nil {
			return err
		}
	}
	p.claims = append(p.claims, reads.choose()...)
	return nil
}

// sendReads sends b, whose statements are settings statements and then
// reads' reads, and reads their results.
func sendReads(ctx context.Context, conn *pgxpool.Conn, b *pgx.Batch, settings int, reads *schedReads) error {
	br := conn.SendBatch(ctx, b)
	var err error
	for range settings {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if err == nil {
		err = reads.read(br)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// queueSchedule is stage 0's batch of statements and how many of them
// come before the reads.
func (p *batchPlan) queueSchedule(reads *schedReads) (*pgx.Batch, int) {
	b := &pgx.Batch{}
	settings := p.queueBegin(b, candidatesSettings) // the reads keep custom plans: see queueFirstTrip
	reads.queue(b)
	return b, settings
}

// queueBegin queues BEGIN, setting, and for a batch of claims alone
// synchronous_commit off, and returns how many statements it queued.
func (p *batchPlan) queueBegin(b *pgx.Batch, setting string) int {
	b.Queue("BEGIN")
	b.Queue(setting)
	if len(p.updates) == 0 {
		b.Queue(claimsOnly)
		return 3
	}
	return 2
}

// queueFirstTrip is stage 2's batch of statements.
func (p *batchPlan) queueFirstTrip(b *Backend) *pgx.Batch {
	first := &pgx.Batch{}
	switch {
	case p.begun && len(p.guesses) > 0:
		// The guards read what candidates.sql reads, under its setting.
		first.Queue(genericPlans)
		p.settings = 1
	case p.begun:
		// After stage 0's reads, which ran with custom plans: a generic
		// plan of candidates.sql cannot drop the branches its parameters
		// decide (the spec filter, whether to probe).
		first.Queue(genericPlans)
		first.Queue(endCandidatesSettings)
		p.settings = 2
	case len(p.slow) == 0 && len(p.guesses) == 0:
		p.implicit = true
		first.Queue(implicitSettings(len(p.updates) == 0))
		p.settings = 1
	default:
		p.settings = p.queueBegin(first, genericPlans)
		if len(p.guesses) > 0 {
			first.Queue(candidatesSettings)
			p.settings++
		}
	}
	p.claimGroups = groupClaims(p.claims)
	p.locks = queueMaxRunningLocks(first, p.claims)
	for _, grp := range p.claimGroups {
		queueClaims(first, grp)
		b.cache.claiming(grp)
	}
	for i := range p.guesses {
		p.guesses[i].queue(first)
		b.cache.claiming(p.guesses[i].claims)
	}
	if p.fast.any() {
		p.fast.queue(first, p.updates)
	}
	if len(p.slow) > 0 {
		queueLockUnits(first, p.slow)
	} else if !p.implicit {
		first.Queue("COMMIT")
	}
	return first
}

// implicitSettings is the statement that makes, for the rest of an
// implicit transaction (one the pipeline's Sync commits), the settings
// queueBegin makes in an explicit one: genericPlans, and claimsOnly for a
// transaction of claims alone. SET LOCAL outside BEGIN would do the same
// but warn, in the server's log too, on every batch; set_config with
// is_local does not.
func implicitSettings(claimsOnly bool) string {
	if claimsOnly {
		return implicitClaimsOnly
	}
	return implicitGenericPlans
}

// readFirstTrip reads stage 2's answers into the claims and out, and
// returns the general path's locked units (nil when there is none and
// the transaction is committed).
func (p *batchPlan) readFirstTrip(b *Backend, br pgx.BatchResults, out *batchOutcome) (*lockedUnits, error) {
	for range p.settings + p.locks { // BEGIN (unless stage 0 sent it), the settings, the max_running locks
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
	}
	groups := make([][]*claimRequest, len(p.claimGroups), len(p.claimGroups)+len(p.guesses))
	copy(groups, p.claimGroups)
	for i := range p.guesses {
		groups = append(groups, p.guesses[i].claims)
	}
	for j, grp := range groups {
		rows, err := br.Query()
		if err == nil && j < len(p.claimGroups) {
			_, err = collectClaims(rows, grp)
		} else if err == nil {
			err = p.guesses[j-len(p.claimGroups)].read(rows)
		}
		if err != nil {
			return nil, err
		}
		b.cache.claimed(grp)
		for _, cl := range grp {
			if n := len(cl.attempts); n > 0 {
				out.events.of(cl.spec.id).Leased += uint64(n)
			}
		}
	}
	if p.fast.any() {
		done, err := p.fast.read(br, p.updates, out.events, &out.ready)
		if err != nil {
			return nil, err
		}
		for i := range p.fast.all() {
			if done[i] {
				out.fast++
			} else {
				out.again[p.updIdx[i]] = true
			}
		}
	}
	if p.implicit {
		return nil, nil // committed at the pipeline's Sync, which br.Close reads
	}
	if len(p.slow) == 0 {
		_, err := br.Exec() // COMMIT
		return nil, err
	}
	return readLockedUnits(br)
}

// compute is stage 3: the general path's transitions from the locked
// units, their results and the writes of round trip 2.
func (p *batchPlan) compute(ctx context.Context, conn *pgxpool.Conn, locked *lockedUnits, results []error) (*pgx.Batch, *afterUpdates, error) {
	second := &pgx.Batch{}
	slowResults := make([]error, len(p.slow))
	after, err := applyUpdates(ctx, conn, p.slow, locked, slowResults, second)
	if err != nil {
		return nil, nil, err
	}
	for j, i := range p.slowIdx {
		results[p.updIdx[i]] = slowResults[j]
	}
	return second, after, nil
}

// runBatch runs the batch in one transaction on one connection, stage by
// stage.
func (c *committer) runBatch(ctx context.Context, batch []*commitItem, results []error) (out batchOutcome, err error) {
	p := planBatch(batch, results) // 1
	out.again = make([]bool, len(batch))
	out.events = specEvents{}

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

	p.guesses, p.gets = planGuesses(p.gets) // schedguess.go
	if len(p.gets) > 0 {
		inTx = true
		if err := p.schedule(ctx, conn); err != nil { // 0
			return batchOutcome{}, err
		}
	}
	br := conn.SendBatch(ctx, p.queueFirstTrip(c.b)) // 2
	// An implicit transaction ends with its round trip, committed or not.
	inTx = !p.implicit
	locked, err := p.readFirstTrip(c.b, br, &out)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return batchOutcome{}, err
	}
	if locked == nil { // committed in round trip 2's place
		inTx = false
		return out, nil
	}

	second, after, err := p.compute(ctx, conn, locked, results) // 3
	if err != nil {
		return batchOutcome{}, err
	}
	if after.empty() { // 5, with no 4
		second.Queue("COMMIT")
		if err := conn.SendBatch(ctx, second).Close(); err != nil {
			return batchOutcome{}, err
		}
	} else {
		if err := conn.SendBatch(ctx, second).Close(); err != nil {
			return batchOutcome{}, err
		}
		tail := &pgx.Batch{}
		if err := after.run(ctx, conn, tail); err != nil { // 4
			return batchOutcome{}, err
		}
		tail.Queue("COMMIT")
		if err := conn.SendBatch(ctx, tail).Close(); err != nil { // 5
			return batchOutcome{}, err
		}
	}
	inTx = false
	for spec, ev := range after.events { // the general path's and run's
		out.events.of(spec).Add(ev)
	}
	out.ready = append(out.ready, after.ready...)
	return out, nil
}
