package postgres

import (
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/postgres/cachekeep"
)

// The cache machinery (package cachekeep): what the backend does beside
// the requests to keep PostgreSQL's caches and statistics in shape for the
// hot path (reading ahead of claims, warming queue fronts after bulk adds,
// VACUUM behind claims, ANALYZE after bulk loads). The request paths only
// tell it what happened, through cacheKeeper; Options.NoCacheKeeping swaps
// in one that does nothing, for a database whose maintenance is run from
// elsewhere, or to measure what the machinery is worth.
type cacheKeeper interface {
	// claiming: claims (one statement's, on one spec) are about to run.
	claiming(claims []*claimRequest)
	// claimed: that statement leased its units (claims' attempts).
	claimed(claims []*claimRequest)
	// committed: a transaction leased n units.
	committed(n int)
	// added: n units were added to spec.
	added(spec int64, n int)
	// close stops the machinery and waits for what it runs.
	close()
}

// keeper hands what happened to a cachekeep.Keeper, in its terms.
type keeper struct{ k *cachekeep.Keeper }

func (k keeper) claiming(claims []*claimRequest) {
	n := 0
	for _, cl := range claims {
		n += cl.n
	}
	k.k.Claiming(claims[0].spec.id, n)
}

func (k keeper) claimed(claims []*claimRequest) {
	n := 0
	var last cachekeep.Pos
	for _, cl := range claims {
		// Each claim's attempts are in claim order: only the last ones
		// compete.
		if c := len(cl.attempts); c > 0 {
			if p := attemptPos(&cl.attempts[c-1]); n == 0 || p.After(last) {
				last = p
			}
			n += c
		}
	}
	if n > 0 {
		k.k.Claimed(claims[0].spec.id, n, last)
	}
}

// attemptPos is the place in claim order of a's unit.
func attemptPos(a *coordinate.Attempt) cachekeep.Pos {
	return cachekeep.Pos{Priority: a.Priority, Key: []byte(a.Key.Bytes)}
}

func (k keeper) committed(n int)         { k.k.Committed(n) }
func (k keeper) added(spec int64, n int) { k.k.Added(spec, n) }
func (k keeper) close()                  { k.k.Close() }

// noKeeper is the machinery turned off.
type noKeeper struct{}

func (noKeeper) claiming([]*claimRequest) {}
func (noKeeper) claimed([]*claimRequest)  {}
func (noKeeper) committed(int)            {}
func (noKeeper) added(int64, int)         {}
func (noKeeper) close()                   {}
