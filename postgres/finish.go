package postgres

import (
	_ "embed"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

//go:embed queries/finish.sql
var finishSQL string

// The fast finish path. Nearly every update_work_unit a worker sends
// finishes a unit it holds. Those are written by one statement
// (queries/finish.sql) that checks the unit is still PENDING with a live
// lease as part of its UPDATE, instead of locking and reading each unit
// first and computing the transition in Go: one statement and one WAL
// record per unit less, and a batch of only finishes and claims commits in
// a single round trip. Anything the statement does not match (an expired
// lease, a unit that is not pending, a lost lease, a spec that chains from
// the unit's stored data, a missing unit) goes through the general path
// in update.go, which gives exactly the same result as before.

// fastFinishable reports whether r may try the fast path: it finishes,
// sets no lease, and either carries data that chains no units or leaves
// chaining to the statement's check that the spec has no `then`.
func fastFinishable(r *updateRequest) bool {
	return !r.slow && r.upd.Status == coordinate.StatusFinished && r.upd.LeaseTime == nil
}

// fastFinishes is the fast-path part of a batch.
type fastFinishes struct {
	reqs []int // indexes into the batch's updates, in (namespace, spec, key) order
}

// splitFast picks the updates of a batch that try the fast path: those
// fastFinishable whose unit no other update of the batch names (the
// general path applies several updates of one unit in order), leaving
// out those whose data chains units on a spec last seen chaining
// (chainhints.go), which the fast statement would not apply.
func splitFast(updates []*updateRequest) (fast fastFinishes, slow []int) {
	count := make(map[unitKey]int, len(updates))
	for _, r := range updates {
		count[r.unit()]++
	}
	for i, r := range updates {
		if !fastFinishable(r) || count[r.unit()] != 1 {
			slow = append(slow, i)
			continue
		}
		r.chains = r.upd.Data != nil && len(coordinate.ChainedUnits(r.upd.Data, 0)) > 0
		if !r.chains || !r.ns.b.chainHints.chaining(r) {
			fast.reqs = append(fast.reqs, i)
		} else {
			slow = append(slow, i)
		}
	}
	// Lock rows in one order in every batch, as queueLockUnits does.
	sort.Slice(fast.reqs, func(i, j int) bool {
		return updates[fast.reqs[i]].unit().less(updates[fast.reqs[j]].unit())
	})
	return fast, slow
}

// queue queues finish.sql and then the resolution of the edges to the
// units it finished.
func (f fastFinishes) queue(b *pgx.Batch, updates []*updateRequest) {
	n := len(f.reqs)
	var (
		units    = make([]unitKey, n)
		datas    = make([][]byte, n)
		nochains = make([]bool, n)
		leases   = make([]*int64, n)
		nows     = make([]int64, n)
		reqs     = make([]int32, n)
		latest   int64
	)
	for j, i := range f.reqs {
		r := updates[i]
		units[j] = r.unit()
		if r.upd.Data != nil {
			datas[j] = []byte(r.upd.Data)
			nochains[j] = !r.chains
		}
		leases[j] = r.leaseID
		nows[j] = r.now.UnixNano()
		latest = max(latest, nows[j])
		reqs[j] = int32(i)
	}
	nss, specs, keys := unitKeyArrays(units)
	b.Queue(finishSQL, nss, specs, keys, datas, nochains, leases, nows, reqs)
	queueResolveFinished(b, units, latest)
}

// read reads finish.sql's answer: which updates it applied, each a unit
// of its spec finished (counted in events).
func (f fastFinishes) read(br pgx.BatchResults, n int, events specEvents) ([]bool, error) {
	done := make([]bool, n)
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	var req int32
	var spec int64
	if _, err := pgx.ForEachRow(rows, []any{&req, &spec}, func() error {
		done[req] = true
		events.of(spec).Finished++
		return nil
	}); err != nil {
		return nil, err
	}
	if _, err := br.Exec(); err != nil { // resolveFinishedSQL
		return nil, err
	}
	return done, nil
}
