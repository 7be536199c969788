package postgres

import "sync"

// chainHints remembers, for each spec whose finishes were seen carrying
// units to chain, whether the spec chains them (has a `then`), so such a
// finish goes straight to the general path instead of trying the fast
// statement first, which cannot apply it, and then running again in a
// transaction of its own (finish.go, committer.applyLane). It is only a
// hint: a finish the fast statement does not match still falls through,
// and the general path gives the same result as the fast one, so a stale
// hint (a spec redefined, here or by another daemon) costs a round trip,
// never a wrong answer; each finish of the kind corrects it. Specs are
// few, so the map is not pruned.
type chainHints struct {
	mu     sync.Mutex
	chains map[chainTarget]bool
}

// chaining reports whether r's spec was last seen chaining.
func (h *chainHints) chaining(r *updateRequest) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.chains[chainTarget{r.ns.id, r.spec}]
}

// saw records whether r's spec chains the units r's data names.
func (h *chainHints) saw(r *updateRequest, chains bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.chains == nil {
		h.chains = map[chainTarget]bool{}
	}
	h.chains[chainTarget{r.ns.id, r.spec}] = chains
}
