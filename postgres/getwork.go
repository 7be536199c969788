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
	candidatesText string
	candidatesSQL  = withFragments(candidatesText)
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
	row       *specRow // shared: never changed (specrows.go)
	available int64
	pending   int64
	best      float64 // the best unit's priority, when hasBest
	hasBest   bool    // the read wanted it (and found an available unit)
	// chooseable is false for a spec read only for its `then` path
	// (queries/candidates.sql): it has no counts, and the scheduler
	// passes over it.
	chooseable bool
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
	// The first round reads, chooses and claims in one transaction of
	// the committer, sharing the read with the requests of its batch
	// (schedclaims.go). When it found nothing to hand out there is
	// nothing (every rule was applied to what was read after the call
	// arrived); when its claim came back empty (others took the units
	// first, or only delayed units were left) or it chose a spec with
	// max_running from a shared read, later rounds read alone.
	g := &getRequest{ns: ns, req: req, now: now, expires: expires}
	if err := ns.b.commits.submit(ctx, &commitItem{get: g}); err != nil {
		return nil, fmt.Errorf("postgres get_work: %w", err)
	}
	if g.missed {
		// It claimed without the read, and the claim's guard found the
		// spec it guessed no longer the only choice (schedguess.go):
		// the first round again, with the read.
		g.noGuess = true
		if err := ns.b.commits.submit(ctx, &commitItem{get: g}); err != nil {
			return nil, fmt.Errorf("postgres get_work: %w", err)
		}
	}
	switch {
	case g.claim != nil && len(g.claim.attempts) > 0:
		return g.claim.attempts, nil
	case g.continuous != nil:
		as, err := ns.claimContinuous(ctx, *g.continuous, req.Worker, now, expires)
		if err != nil || len(as) > 0 {
			return as, err
		}
	case g.claim == nil && !g.alone:
		return []coordinate.Attempt{}, nil
	}
	for round := 1; round < maxClaimRounds; round++ {
		cands, err := ns.candidates(ctx, req, now)
		if err != nil {
			return nil, err
		}
		sc, i, ok := ns.choose(cands, req, now)
		if !ok {
			return []coordinate.Attempt{}, nil
		}
		c := &cands[i]
		var as []coordinate.Attempt
		if sc[i].Available > 0 {
			n := coordinate.WorkCount(&c.row.spec.Meta, int(c.pending), req.MaxJobs)
			as, err = ns.claim(ctx, g.newClaim(*c.row, n))
		} else {
			as, err = ns.claimContinuous(ctx, *c.row, req.Worker, now, expires)
		}
		if err != nil {
			return nil, err
		}
		if len(as) > 0 {
			return as, nil
		}
	}
	return []coordinate.Attempt{}, nil
}

// choose runs the scheduler over cands: the spec to claim from, with the
// scheduler's view of every candidate.
func (ns *namespace) choose(cands []candidate, req coordinate.WorkRequest, now time.Time) ([]coordinate.SpecCandidate, int, bool) {
	return ns.chooseWith(nil, cands, req, now)
}

// chooseWith is choose building the scheduler's view in buf when it has
// room: the requests sharing a read (schedclaims.go) use one buffer in
// turn.
func (ns *namespace) chooseWith(buf []coordinate.SpecCandidate, cands []candidate, req coordinate.WorkRequest, now time.Time) ([]coordinate.SpecCandidate, int, bool) {
	sc := buf[:0]
	if cap(sc) < len(cands) {
		sc = make([]coordinate.SpecCandidate, 0, len(cands))
	}
	sc = sc[:len(cands)]
	for i := range cands {
		c := &cands[i]
		m := &c.row.spec.Meta
		sc[i] = coordinate.SpecCandidate{
			Name:    c.row.spec.Name.Bytes,
			Meta:    m,
			Pending: int(c.pending),
			ContinuousReady: c.chooseable && m.Continuous && c.available == 0 && c.pending == 0 &&
				!now.Before(m.NextContinuous),
		}
		if c.hasBest {
			sc[i].Available = int(c.available)
			sc[i].BestPriority = c.best
		}
	}
	i, ok := coordinate.ChooseWorkSpec(sc, req, coordinate.SchedulerOptions{EnforceMinGB: ns.b.opts.EnforceMinGB})
	return sc, i, ok
}

// candidates reads the scheduler's view of the namespace's runnable
// specs alone, probing even a lone spec's best unit (it may have only
// delayed units): get_work's rounds after the first, which reads in the
// committer's transaction (schedclaims.go).
func (ns *namespace) candidates(ctx context.Context, req coordinate.WorkRequest, now time.Time) ([]candidate, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(candidatesSettings)
	var cands []candidate
	// readAll: every row comes with its settings, so the read cannot miss.
	b.Queue(candidatesSQL, ns.id, filterNames(req.WorkSpecs), now.UnixNano(), true, readAll).Query(func(rows pgx.Rows) error {
		var err error
		cands, _, err = collectCandidates(rows, &ns.specRows, filterKey(req.WorkSpecs))
		return err
	})
	b.Queue("COMMIT")
	if err := ns.b.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("postgres get_work candidates: %w", err)
	}
	return cands, nil
}

// claim leases cl's units (up to cl.n of its spec, their data within
// cl.maxBytes: coordinate.WithinBytes), group-committed with other
// callers' claims and updates.
func (ns *namespace) claim(ctx context.Context, cl *claimRequest) ([]coordinate.Attempt, error) {
	if cl.n <= 0 {
		return nil, nil
	}
	if err := ns.b.commits.submit(ctx, &commitItem{claim: cl}); err != nil {
		return nil, fmt.Errorf("postgres get_work on %q: %w", cl.spec.spec.Name.Bytes, err)
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
