package postgres

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// The statements, from sql/getwork.sql.
var (
	continuousGateSQL        = namedSQL("continuous_gate")
	continuousUnitSQL        = namedSQL("continuous_unit")
	continuousOutstandingSQL = namedSQL("continuous_outstanding")
)

var (
	//go:embed queries/candidates.sql
	candidatesSQL string
	//go:embed queries/claim.sql
	claimSQL string
	//go:embed queries/claim_many.sql
	claimManySQL string
)

// candidatesSettings is set for candidates.sql, in the same transaction
// (one round trip). Its plan must reach unit_count through the index, once
// per spec: with statistics from when the namespace had one spec (a
// namespace whose specs were all created within autovacuum's last minute)
// the planner scanned all of unit_count once per spec instead, an order of
// magnitude slower with many specs (docs/postgres.md, "10,000 units").
const candidatesSettings = "SET LOCAL enable_seqscan = off"

// endCandidatesSettings ends candidatesSettings in a transaction that
// goes on to claim (pipeline.go's stage 0).
const endCandidatesSettings = "RESET enable_seqscan"

// candidate is one spec as the scheduler sees it.
type candidate struct {
	row       specRow
	available int64
	pending   int64
	best      *float64
}

// maxClaimRounds bounds how often GetWork re-chooses when other callers
// took the units it chose first.
const maxClaimRounds = 5

func (ns *namespace) GetWork(ctx context.Context, req coordinate.WorkRequest) ([]coordinate.Attempt, error) {
	now := ns.now()
	if err := ns.b.expireLeases(ctx, now); err != nil {
		return nil, err
	}
	lease := req.LeaseTime
	if lease <= 0 {
		lease = coordinate.DefaultLease
	}
	expires := now.Add(lease)
	// The first round shares its read: in the committer's transaction
	// with the requests of its batch while few requests wait for the
	// committer (scheduledRound), in a read of its own shared with the
	// calls that arrive while one runs when many do (schedreads.go).
	// When it found nothing to hand out there is nothing (every rule was
	// applied to what was read after the call arrived); when its claim
	// came back empty (others took the units first, or only delayed units
	// were left) or it chose a spec with max_running from a shared read,
	// later rounds read alone.
	var (
		as   []coordinate.Attempt
		more bool
		err  error
	)
	if ns.b.commits.unanswered.Load() < ns.b.commits.foldBelow {
		as, more, err = ns.scheduledRound(ctx, req, now, expires)
	} else {
		as, more, err = ns.sharedRound(ctx, req, now, expires)
	}
	if err != nil || !more {
		return as, err
	}
	for round := 1; round < maxClaimRounds; round++ {
		cands, err := ns.candidates(ctx, req, now, true)
		if err != nil {
			return nil, err
		}
		sc, i, ok := ns.choose(cands, req, now)
		if !ok {
			return []coordinate.Attempt{}, nil
		}
		if as, err := ns.claimChosen(ctx, &cands[i], sc[i], req, now, expires); err != nil || len(as) > 0 {
			return as, err
		}
	}
	return []coordinate.Attempt{}, nil
}

// defaultFoldBelow is how many requests may be waiting for the committer
// for a get_work to read, choose and claim in the committer's transaction
// (scheduledRound). With few waiting (8 worker connections) that saves a
// transaction and a queue per call; with many, batches are big and the
// read of its own, shared with the calls that arrive meanwhile and run
// beside the committer's transaction in flight, kept drain1 at 64
// connections about 8% faster (docs/postgres.md, "At 8 connections").
const defaultFoldBelow = 16

// scheduledRound is get_work's first round through the committer
// (schedclaims.go). It returns the units leased, or more when later
// rounds must read alone.
func (ns *namespace) scheduledRound(ctx context.Context, req coordinate.WorkRequest, now, expires time.Time) ([]coordinate.Attempt, bool, error) {
	g := &getRequest{ns: ns, req: req, now: now, expires: expires}
	if err := ns.b.commits.submit(ctx, &commitItem{get: g}); err != nil {
		return nil, false, fmt.Errorf("postgres get_work: %w", err)
	}
	switch {
	case g.claim != nil && len(g.claim.attempts) > 0:
		return g.claim.attempts, false, nil
	case g.continuous != nil:
		as, err := ns.claimContinuous(ctx, *g.continuous, req.Worker, now, expires)
		return as, err == nil && len(as) == 0, err
	case g.claim == nil && !g.alone:
		return []coordinate.Attempt{}, false, nil
	}
	return nil, true, nil
}

// sharedRound is get_work's first round with a shared read of its own
// (schedreads.go), then the claim through the committer. It returns the
// units leased, or more when later rounds must read alone.
func (ns *namespace) sharedRound(ctx context.Context, req coordinate.WorkRequest, now, expires time.Time) ([]coordinate.Attempt, bool, error) {
	cands, shared, err := ns.sharedCandidates(ctx, req)
	if err != nil {
		return nil, false, err
	}
	sc, i, ok := ns.choose(cands, req, now)
	if ok && shared && cands[i].row.spec.Meta.MaxRunning != 0 {
		// Every caller sharing the read would count the same pending
		// units and could together pass max_running: read alone.
		return nil, true, nil
	}
	if !ok {
		return []coordinate.Attempt{}, false, nil
	}
	as, err := ns.claimChosen(ctx, &cands[i], sc[i], req, now, expires)
	return as, err == nil && len(as) == 0, err
}

// claimChosen claims from the spec the scheduler chose: units it has, or
// a new unit of a continuous spec.
func (ns *namespace) claimChosen(ctx context.Context, c *candidate, sc coordinate.SpecCandidate, req coordinate.WorkRequest, now, expires time.Time) ([]coordinate.Attempt, error) {
	if sc.Available > 0 {
		n := coordinate.WorkCount(&c.row.spec.Meta, int(c.pending), req.MaxJobs)
		return ns.claim(ctx, c.row, n, req.MaxBytes, req.Worker, now, expires)
	}
	return ns.claimContinuous(ctx, c.row, req.Worker, now, expires)
}

// choose runs the scheduler over cands: the spec to claim from, with the
// scheduler's view of every candidate.
func (ns *namespace) choose(cands []candidate, req coordinate.WorkRequest, now time.Time) ([]coordinate.SpecCandidate, int, bool) {
	sc := make([]coordinate.SpecCandidate, len(cands))
	for i := range cands {
		c := &cands[i]
		m := &c.row.spec.Meta
		sc[i] = coordinate.SpecCandidate{
			Name:    c.row.spec.Name.Bytes,
			Meta:    m,
			Pending: int(c.pending),
			ContinuousReady: m.Continuous && c.available == 0 && c.pending == 0 &&
				!now.Before(m.NextContinuous),
		}
		if c.best != nil {
			sc[i].Available = int(c.available)
			sc[i].BestPriority = *c.best
		}
	}
	i, ok := coordinate.ChooseWorkSpec(sc, req, coordinate.SchedulerOptions{EnforceMinGB: ns.b.opts.EnforceMinGB})
	return sc, i, ok
}

// candidates reads the scheduler's view of the namespace's runnable
// specs in a transaction of its own; probeAll probes even a lone spec's
// best unit (it may have only delayed units), as get_work's rounds after
// the first do.
func (ns *namespace) candidates(ctx context.Context, req coordinate.WorkRequest, now time.Time, probeAll bool) ([]candidate, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(candidatesSettings)
	var cands []candidate
	b.Queue(candidatesSQL, ns.id, filterNames(req.WorkSpecs), now.UnixNano(), probeAll).Query(func(rows pgx.Rows) error {
		var err error
		cands, err = collectCandidates(rows)
		return err
	})
	b.Queue("COMMIT")
	if err := ns.b.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("postgres get_work candidates: %w", err)
	}
	return cands, nil
}

// claim leases up to n units of spec to worker, their data within
// maxBytes (coordinate.WithinBytes), group-committed with other callers'
// claims and updates.
func (ns *namespace) claim(ctx context.Context, spec specRow, n int, maxBytes int64, worker coordinate.Name, now, expires time.Time) ([]coordinate.Attempt, error) {
	if n <= 0 {
		return nil, nil
	}
	cl := &claimRequest{ns: ns, spec: spec, n: n, maxBytes: maxBytes, worker: worker, now: now, expires: expires}
	if err := ns.b.commits.submit(ctx, &commitItem{claim: cl}); err != nil {
		return nil, fmt.Errorf("postgres get_work on %q: %w", spec.spec.Name.Bytes, err)
	}
	return cl.attempts, nil
}

// claimContinuous creates and leases one synthetic unit of a continuous
// spec (SEMANTICS §9). The conditional update of next_continuous is the
// gate: of several daemons asking at once, only one creates a unit.
func (ns *namespace) claimContinuous(ctx context.Context, spec specRow, worker coordinate.Name, now, expires time.Time) ([]coordinate.Attempt, error) {
	key := coordinate.ContinuousKey(now)
	var as []coordinate.Attempt
	err := ns.b.inTxCounted(ctx, func(tx pgx.Tx, d countDelta) error {
		as = nil
		if spec.spec.Meta.MaxRunning != 0 {
			room, err := lockMaxRunning(ctx, tx, spec.id) // maxrunning.go
			if err != nil || !room {
				return err
			}
		}
		tag, err := tx.Exec(ctx, continuousGateSQL,
			spec.id, now.UnixNano())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		var leaseID int64
		err = tx.QueryRow(ctx, continuousUnitSQL,
			spec.id, bytesOf(key.Bytes), []byte(coordinate.EmptyMap), expires.UnixNano(),
			bytesOf(worker.Bytes), worker.Text, key.Text).Scan(&leaseID)
		if errNotFound(err) {
			// Same millisecond as an existing unit: create no second one.
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, continuousOutstandingSQL,
			ns.id, bytesOf(worker.Bytes), now.UnixNano(), spec.id, bytesOf(key.Bytes)); err != nil {
			return err
		}
		d.move(spec.id, 0, coordinate.StatusPending)
		if err := d.apply(ctx, tx); err != nil {
			return err
		}
		as = []coordinate.Attempt{{
			Spec: spec.spec.Name, Key: key, Data: coordinate.EmptyMap, Worker: worker,
			Expires: expires, ID: leaseID,
		}}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres get_work continuous unit of %q: %w", spec.spec.Name.Bytes, err)
	}
	return as, nil
}
