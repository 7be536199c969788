package coordinate

import (
	"cmp"
	"slices"
)

// SpecCandidate is what the scheduler knows about one spec.
type SpecCandidate struct {
	Name    string
	Meta    *WorkSpecMeta
	Pending int // PENDING units now
	// Available counts units that could be handed out now (AVAILABLE, not
	// delayed, not blocked); only > 0 matters.
	Available int
	// BestPriority is the priority of the best such unit (ignored when
	// Available == 0).
	BestPriority float64
	// ContinuousReady: Meta.Continuous && no AVAILABLE and no PENDING unit
	// && now >= NextContinuous.
	ContinuousReady bool
}

// SchedulerOptions are daemon-wide scheduler switches.
type SchedulerOptions struct {
	// EnforceMinGB skips specs whose min_gb exceeds the worker's
	// available_gb (DECISIONS §3; off by default).
	EnforceMinGB bool
}

// ChooseWorkSpec is the scheduler of DECISIONS §1 as a pure, deterministic
// function. Filters: name filter req.WorkSpecs, runtime filter req.Runtimes
// (empty = only ""), task filter req.Tasks (specs with a runtime), paused, weight <= 0, max_running reached, min_gb >
// req.AvailableGB when enforced and AvailableGB > 0, no work and not
// ContinuousReady. Then, in order: highest spec Priority; specs with real
// units beat continuous-only ones; highest BestPriority; the then_preempts
// simple form (prefer a spec that is the `then` successor of another
// remaining candidate whose ThenPreempts is true, repeated so the most
// downstream spec of a chain wins); lowest (1+Pending)/Weight; name bytes.
// It returns the index into cands, or ok=false if no spec qualifies.
func ChooseWorkSpec(cands []SpecCandidate, req WorkRequest, opts SchedulerOptions) (int, bool) {
	remaining := make([]int, 0, len(cands))
	for i := range cands {
		if eligible(&cands[i], req, opts) {
			remaining = append(remaining, i)
		}
	}
	if len(remaining) == 0 {
		return 0, false
	}

	remaining = keepBest(remaining, func(a, b int) int {
		return cmp.Compare(cands[a].Meta.Priority, cands[b].Meta.Priority)
	})
	remaining = keepBest(remaining, func(a, b int) int {
		return cmpBool(cands[a].Available > 0, cands[b].Available > 0)
	})
	if cands[remaining[0]].Available > 0 {
		remaining = keepBest(remaining, func(a, b int) int {
			return cmp.Compare(cands[a].BestPriority, cands[b].BestPriority)
		})
	}
	remaining = preferSuccessors(cands, remaining)

	best := remaining[0]
	for _, i := range remaining[1:] {
		if lessLoaded(&cands[i], &cands[best]) {
			best = i
		}
	}
	return best, true
}

// eligible applies the filters of SEMANTICS §8.1 plus the runtime, task,
// weight and min_gb rules.
func eligible(c *SpecCandidate, req WorkRequest, opts SchedulerOptions) bool {
	m := c.Meta
	if m == nil || m.Paused || m.Weight <= 0 {
		return false
	}
	if len(req.WorkSpecs) > 0 && !slices.Contains(req.WorkSpecs, c.Name) {
		return false
	}
	if len(req.Runtimes) == 0 {
		if m.Runtime != "" {
			return false
		}
	} else if !slices.Contains(req.Runtimes, m.Runtime) {
		return false
	}
	if m.Runtime != "" && req.Tasks != nil && !slices.Contains(req.Tasks, m.Task) {
		return false
	}
	if limit, ok := m.MaxRunningValue(); ok && c.Pending >= limit {
		return false // a max_running <= 0 holds the spec back entirely
	}
	if opts.EnforceMinGB && req.AvailableGB > 0 && m.MinGB > req.AvailableGB {
		return false
	}
	return c.Available > 0 || c.ContinuousReady
}

// keepBest keeps the indices that compare highest under cmp.
func keepBest(idx []int, cmp func(a, b int) int) []int {
	best := idx[0]
	for _, i := range idx[1:] {
		if cmp(i, best) > 0 {
			best = i
		}
	}
	out := idx[:0]
	for _, i := range idx {
		if cmp(i, best) == 0 {
			out = append(out, i)
		}
	}
	return out
}

// preferSuccessors implements the simple then_preempts rule: while some
// remaining candidates are the `then` successor of another remaining
// candidate that lets its successor preempt it, keep only those. Repeating
// makes the most downstream spec of a chain win; a cycle stops the loop.
//
// A successor is found through specs that are not remaining candidates
// (all of whose units are leased, say, or of a lower unit priority), as
// Python's path scheduler walked its whole `then` path: in a -> b -> c
// with only a and c remaining, c preempts a when b, the spec just before
// c, lets it. Those specs are looked up among all of cands, so a backend
// must pass every spec that has a `then` (SEMANTICS §8.4).
func preferSuccessors(cands []SpecCandidate, idx []int) []int {
	for len(idx) > 1 {
		w := successorWalk{cands: cands, idx: idx}
		var preempting []int // remaining candidates another lets preempt it
		for _, i := range idx {
			if cands[i].Meta.Then == "" {
				continue
			}
			if to, ok := w.successor(i); ok && !slices.Contains(preempting, to) {
				preempting = append(preempting, to)
			}
		}
		if len(preempting) == 0 || len(preempting) == len(idx) {
			return idx
		}
		next := make([]int, 0, len(preempting))
		for _, i := range idx {
			if slices.Contains(preempting, i) {
				next = append(next, i)
			}
		}
		idx = next
	}
	return idx
}

// successorWalk finds, for one round of preferSuccessors, the remaining
// candidate each spec's `then` path leads to first. Its maps are made
// only when needed: most rounds find each successor among a few
// remaining candidates.
type successorWalk struct {
	cands     []SpecCandidate
	idx       []int          // the remaining candidates
	remaining map[string]int // name -> index of idx's, when idx is long
	all       map[string]int // name -> index, every candidate; made on first use
}

// shortScan is how many remaining candidates are searched by name one by
// one before a map is worth making.
const shortScan = 16

// remainingIndex finds a remaining candidate by name.
func (w *successorWalk) remainingIndex(name string) (int, bool) {
	if len(w.idx) <= shortScan {
		for _, i := range w.idx {
			if w.cands[i].Name == name {
				return i, true
			}
		}
		return 0, false
	}
	if w.remaining == nil {
		w.remaining = make(map[string]int, len(w.idx))
		for _, i := range w.idx {
			w.remaining[w.cands[i].Name] = i
		}
	}
	i, ok := w.remaining[name]
	return i, ok
}

// allIndex finds any candidate by name.
func (w *successorWalk) allIndex(name string) (int, bool) {
	if w.all == nil {
		w.all = make(map[string]int, len(w.cands))
		for k := range w.cands {
			w.all[w.cands[k].Name] = k
		}
	}
	i, ok := w.all[name]
	return i, ok
}

// successor is the remaining candidate that the `then` path from remaining
// candidate i reaches first, through specs passed over, when the spec just
// before it lets it preempt. A path that ends, loops among specs passed
// over, or comes back to i has none.
func (w *successorWalk) successor(i int) (int, bool) {
	var passed map[int]bool // the specs passed over so far
	for cur := i; ; {
		m := w.cands[cur].Meta
		if m.Then == "" || m.Then == w.cands[cur].Name {
			return 0, false
		}
		if j, ok := w.remainingIndex(m.Then); ok {
			return j, j != i && m.ThenPreempts
		}
		j, ok := w.allIndex(m.Then)
		if !ok || passed[j] || w.cands[j].Meta == nil {
			return 0, false
		}
		if passed == nil {
			passed = map[int]bool{}
		}
		passed[j] = true
		cur = j
	}
}

// lessLoaded reports whether a has a lower (1+pending)/weight than b, ties
// broken by name bytes. Weights are positive here (eligible).
func lessLoaded(a, b *SpecCandidate) bool {
	l := int64(1+a.Pending) * int64(b.Meta.Weight)
	r := int64(1+b.Pending) * int64(a.Meta.Weight)
	if l != r {
		return l < r
	}
	return a.Name < b.Name
}

// WorkCount is how many units one get_work may take from the chosen spec:
// min(maxJobs (< 1 -> 1), MaxGetwork if > 0, max_running-pending if
// max_running is set), never negative.
func WorkCount(meta *WorkSpecMeta, pending, maxJobs int) int {
	n := max(1, maxJobs)
	if meta.MaxGetwork > 0 {
		n = min(n, meta.MaxGetwork)
	}
	if limit, ok := meta.MaxRunningValue(); ok {
		n = min(n, limit-pending)
	}
	return max(0, n)
}

// WithinBytes reports whether a unit with size bytes of data may join
// units already holding used bytes under a budget of max bytes (0 means
// no budget). The first unit of a call always may, so every call makes
// progress however large one unit is. Units are taken in order and the
// first that does not fit ends the call.
func WithinBytes(used, size, max int64, first bool) bool {
	return first || max <= 0 || used+size <= max
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
