package postgres

// The cache machinery: what the backend does beside the requests to keep
// PostgreSQL's caches and statistics in shape for the hot path (reading
// ahead of claims, readahead.go; warming queue fronts after bulk adds,
// warmhead.go; VACUUM behind claims, vacuum.go; ANALYZE after bulk loads,
// analyze.go). The request paths only tell it what happened, through
// cacheKeeper; Options.NoCacheKeeping swaps in one that does nothing, for
// a database whose maintenance is run from elsewhere, or to measure what
// the machinery is worth.
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

// keeper is the machinery of this backend.
type keeper struct{ b *Backend }

func (k keeper) claiming(claims []*claimRequest) { k.b.claimingUnits(claims) }
func (k keeper) claimed(claims []*claimRequest)  { k.b.claimedUnits(claims) }
func (k keeper) committed(n int)                 { k.b.noteClaimed(n) }
func (k keeper) added(spec int64, n int) {
	k.b.noteAdded(n)
	k.b.warmAfterAdds(spec, n)
}

func (k keeper) close() {
	k.b.analyze.run.wait()
	k.b.vacuum.run.wait()
	k.b.readAhead.close()
}

// noKeeper is the machinery turned off.
type noKeeper struct{}

func (noKeeper) claiming([]*claimRequest) {}
func (noKeeper) claimed([]*claimRequest)  {}
func (noKeeper) committed(int)            {}
func (noKeeper) added(int64, int)         {}
func (noKeeper) close()                   {}
