package postgres

import (
	_ "embed"
	"iter"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

var (
	//go:embed queries/finish.sql
	finishText string
	//go:embed queries/finish_chain.sql
	finishChainText string

	finishSQL      = withFragments(finishText)
	finishChainSQL = withFragments(finishChainText)
)

// The fast finish path. Nearly every update_work_unit a worker sends
// finishes a unit it holds. Those are written by one statement
// (queries/finish.sql) that checks the unit is still PENDING with a live
// lease as part of its UPDATE, instead of locking and reading each unit
// first and computing the transition in Go: one statement and one WAL
// record per unit less, and a batch of only finishes and claims commits in
// a single round trip. Anything the statement does not match (an expired
// lease, a unit that is not pending, a lost lease, a spec that chains from
// the unit's stored data, a missing unit) goes through the general path
// in update.go, which gives exactly the same result as before. A finish
// whose data sent names units to chain goes to finish_chain.sql, which
// also inserts those units when none of their keys exists yet (the rest
// of chaining, re-adds included, is the general path's: chains.go).

// fastFinishable reports whether r may try the fast path: it finishes,
// sets no lease, and either carries data that chains no units or leaves
// chaining to the statement's check that the spec has no `then`.
func fastFinishable(r *updateRequest) bool {
	return !r.slow && r.upd.Status == coordinate.StatusFinished && r.upd.LeaseTime == nil
}

// fastFinishes is the fast-path part of a batch.
type fastFinishes struct {
	reqs []int // finish.sql: indexes into the batch's updates, in (namespace, spec, key) order
	// chains are the finishes whose data names units to chain, for
	// finish_chain.sql, in the same order, and chained[i] the units
	// chains[i] names (coordinate.ChainedInputs, deduplicated).
	chains  []int
	chained map[int][]coordinate.WorkUnitInput
}

// chainedKey names a unit to chain by its namespace and key: the target
// spec is only known to the statement.
type chainedKey struct {
	ns  int64
	key string
}

// splitFast picks the updates of a batch that try the fast path: those
// fastFinishable whose unit no other update of the batch names (the
// general path applies several updates of one unit in order). Those
// whose data names units to chain go to finish_chain.sql when the units
// have no dependencies (which the general path checks for cycles and
// locks) and no key another of them names (a merged insert could not
// apply them in order), unless one of their spec's fell through it lately
// (chainhints.go); the rest to the general path.
func splitFast(updates []*updateRequest) (fast fastFinishes, slow []int) {
	count := make(map[unitKey]int, len(updates))
	for _, r := range updates {
		count[r.unit()]++
	}
	var named map[chainedKey]bool
	for i, r := range updates {
		if !fastFinishable(r) || count[r.unit()] != 1 {
			slow = append(slow, i)
			continue
		}
		var chained []coordinate.WorkUnitInput
		if r.upd.Data != nil {
			chained = dedupeUnits(coordinate.ChainedInputs(r.upd.Data))
		}
		r.chains = len(chained) > 0
		if !r.chains {
			fast.reqs = append(fast.reqs, i)
			continue
		}
		if named == nil {
			named = map[chainedKey]bool{}
			fast.chained = map[int][]coordinate.WorkUnitInput{}
		}
		if r.ns.b.chainHints.skip(r) || !chainsFast(r.ns.id, chained, named) {
			slow = append(slow, i)
			continue
		}
		fast.chains = append(fast.chains, i)
		fast.chained[i] = chained
	}
	// Lock rows in one order in every batch, as queueLockUnits does.
	for _, idx := range [][]int{fast.reqs, fast.chains} {
		sort.Slice(idx, func(i, j int) bool {
			return updates[idx[i]].unit().less(updates[idx[j]].unit())
		})
	}
	return fast, slow
}

// chainsFast reports whether units (to chain in namespace ns) may go to
// finish_chain.sql with the others of the batch, whose keys are in
// named, and adds their keys to named if so.
func chainsFast(ns int64, units []coordinate.WorkUnitInput, named map[chainedKey]bool) bool {
	for i := range units {
		if len(units[i].DependsOn) > 0 || named[chainedKey{ns, units[i].Key.Bytes}] {
			return false
		}
	}
	for i := range units {
		named[chainedKey{ns, units[i].Key.Bytes}] = true
	}
	return true
}

// any reports whether the fast path has statements to run.
func (f fastFinishes) any() bool { return len(f.reqs) > 0 || len(f.chains) > 0 }

// all yields the indexes of every fast finish: finish.sql's, then
// finish_chain.sql's.
func (f fastFinishes) all() iter.Seq[int] {
	return func(yield func(int) bool) {
		for _, i := range f.reqs {
			if !yield(i) {
				return
			}
		}
		for _, i := range f.chains {
			if !yield(i) {
				return
			}
		}
	}
}

// queue queues finish.sql, finish_chain.sql (each when it has requests)
// and then the resolution of the edges to the units they finished.
func (f fastFinishes) queue(b *pgx.Batch, updates []*updateRequest) {
	var latest int64
	for i := range f.all() {
		latest = max(latest, updates[i].now.UnixNano())
	}
	units := f.units(updates)
	if len(f.reqs) > 0 {
		f.queueFinish(b, updates)
	}
	if len(f.chains) > 0 {
		f.queueChains(b, updates)
	}
	queueResolveFinished(b, units, latest)
}

// units are the units the fast statements try to finish.
func (f fastFinishes) units(updates []*updateRequest) []unitKey {
	units := make([]unitKey, 0, len(f.reqs)+len(f.chains))
	for i := range f.all() {
		units = append(units, updates[i].unit())
	}
	return units
}

// finishArrays are the parameters finish.sql and finish_chain.sql take
// for their requests, slot j for one request: its unit, the data sent
// (nil: keep the unit's), the lease that must still hold, now and its
// index in the batch.
type finishArrays struct {
	nss         []int64
	specs, keys []string
	datas       [][]byte
	leases      []*int64
	nows        []int64
	reqs        []int32
}

// newFinishArrays builds the arrays for the updates idx names.
func newFinishArrays(updates []*updateRequest, idx []int) finishArrays {
	n := len(idx)
	a := finishArrays{
		nss: make([]int64, n), specs: make([]string, n), keys: make([]string, n),
		datas: make([][]byte, n), leases: make([]*int64, n), nows: make([]int64, n), reqs: make([]int32, n),
	}
	for j, i := range idx {
		r := updates[i]
		u := r.unit()
		a.nss[j], a.specs[j], a.keys[j] = u.ns, u.spec, u.key
		a.datas[j] = []byte(r.upd.Data)
		a.leases[j] = r.leaseID
		a.nows[j] = r.now.UnixNano()
		a.reqs[j] = int32(i)
	}
	return a
}

// queueFinish queues finish.sql.
func (f fastFinishes) queueFinish(b *pgx.Batch, updates []*updateRequest) {
	a := newFinishArrays(updates, f.reqs)
	nochains := make([]bool, len(f.reqs))
	for j, i := range f.reqs {
		nochains[j] = updates[i].upd.Data != nil && !updates[i].chains
	}
	b.Queue(finishSQL, a.nss, a.specs, a.keys, a.datas, nochains, a.leases, a.nows, a.reqs)
}

// queueChains queues finish_chain.sql, with each unit to chain as
// insertIfNew (add.go) writes it.
func (f fastFinishes) queueChains(b *pgx.Batch, updates []*updateRequest) {
	a := newFinishArrays(updates, f.chains)
	var (
		ureqs        []int32
		ukeys, udata [][]byte
		utexts       []bool
		uprios       []*float64
		unbs         []*int64
		ugrps        [][]byte
	)
	for _, i := range f.chains {
		r := updates[i]
		for k := range f.chained[i] {
			in := &f.chained[i][k]
			ureqs = append(ureqs, int32(i))
			ukeys = append(ukeys, bytesOf(in.Key.Bytes))
			utexts = append(utexts, in.Key.Text)
			d := []byte(in.Data)
			if len(d) == 0 {
				d = coordinate.Null
			}
			udata = append(udata, d)
			uprios = append(uprios, in.Priority)
			unbs = append(unbs, notBefore(in, r.now))
			ugrps = append(ugrps, groupCol(in.Group))
		}
	}
	b.Queue(finishChainSQL, a.nss, a.specs, a.keys, a.datas, a.leases, a.nows, a.reqs,
		ureqs, ukeys, utexts, udata, uprios, unbs, ugrps)
}

// read reads the answers of the statements queue queued: which updates
// they applied, each a unit of its spec finished and maybe units added to
// another (counted in events). A chaining finish it did not apply is
// noted in the chain hints.
func (f fastFinishes) read(br pgx.BatchResults, updates []*updateRequest, events specEvents, ready *[]int64) ([]bool, error) {
	done := make([]bool, len(updates))
	var (
		req    int32
		spec   int64
		target *int64
		added  int64
	)
	if len(f.reqs) > 0 {
		rows, err := br.Query()
		if err != nil {
			return nil, err
		}
		if _, err := pgx.ForEachRow(rows, []any{&req, &spec}, func() error {
			done[req] = true
			events.of(spec).Finished++
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if len(f.chains) > 0 {
		rows, err := br.Query()
		if err != nil {
			return nil, err
		}
		if _, err := pgx.ForEachRow(rows, []any{&req, &spec, &target, &added}, func() error {
			done[req] = true
			events.of(spec).Finished++
			if target != nil {
				events.of(*target).Added += uint64(added)
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	tag, err := br.Exec() // resolveFinishedSQL
	if err != nil {
		return nil, err
	}
	// Only finishes this statement applied count: the edges of one that
	// falls through are resolved by the general path (update.go).
	var finished []unitKey
	for i := range f.all() {
		if done[i] {
			finished = append(finished, updates[i].unit())
		}
	}
	resolvedReady(tag, finished, ready)
	for _, i := range f.chains {
		if !done[i] {
			updates[i].ns.b.chainHints.fellThrough(updates[i])
		}
	}
	return done, nil
}
