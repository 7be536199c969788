package postgres

import "sync"

// chainSkips is how many chaining finishes of a spec go straight to the
// general path after one fell through finish_chain.sql.
const chainSkips = 16

// chainHints keeps the chaining finishes of a spec off finish_chain.sql
// for a while after one fell through it, so a spec whose finishes keep
// chaining keys that exist already (several units chaining one unit, a
// re-add: the general path's) does not pay a second transaction and WAL
// flush for each (committer.applyLane reruns what fell through in a
// transaction of its own). The next chainSkips such finishes of the spec
// take the general path in the batch's own transaction; the one after
// tries the fast statement again. It is only a hint: both paths give the
// same result. Specs are few, so the map is not pruned.
type chainHints struct {
	mu    sync.Mutex
	skips map[chainTarget]int
}

// skip reports whether r, a finish whose data chains units, should go
// straight to the general path, and counts it if so.
func (h *chainHints) skip(r *updateRequest) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := chainTarget{r.ns.id, r.spec}
	if h.skips[t] == 0 {
		return false
	}
	h.skips[t]--
	return true
}

// fellThrough records that r, a finish whose data chains units, fell
// through finish_chain.sql.
func (h *chainHints) fellThrough(r *updateRequest) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.skips == nil {
		h.skips = map[chainTarget]int{}
	}
	h.skips[chainTarget{r.ns.id, r.spec}] = chainSkips
}
