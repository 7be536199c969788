// Package cachekeep is the cache machinery of the PostgreSQL backend: what
// it does beside the requests to keep PostgreSQL's caches and statistics
// in shape for the hot path. Reading ahead of claims (readahead.go),
// warming queue fronts after bulk adds (warmhead.go), VACUUM behind claims
// (vacuum.go) and ANALYZE after bulk loads (analyze.go).
//
// The backend only tells a Keeper what happened, in plain data (a spec's
// id, counts, a unit's place in claim order); the Keeper decides what to
// run and runs it in the background on the backend's pool. Its statements
// are in sql/, one per file. It knows the work_unit table's columns and
// indexes, not the backend's types (docs/postgres.md, "The cache
// machinery").
package cachekeep

import (
	"bytes"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coordinated/coordinated/coordinate"
)

// Config is what a Keeper needs.
type Config struct {
	Pool   *pgxpool.Pool    // the backend's pool (read-aheads, VACUUM and ANALYZE run on it)
	Clock  coordinate.Clock // the backend's clock (read-ahead quiet times)
	Logger *slog.Logger
	// SharedBuffers is PostgreSQL's shared_buffers in pages: a queue-front
	// warm reads that many units (at most warmMaxUnits).
	SharedBuffers int
	// VacuumAfterClaims is how many units are claimed between VACUUMs of
	// work_unit; 0 = 100,000, < 0 = never.
	VacuumAfterClaims int
}

// Keeper is the cache machinery of one backend.
type Keeper struct {
	pool        *pgxpool.Pool
	clock       coordinate.Clock
	log         *slog.Logger
	vacuumEvery int

	readAhead readAhead
	vacuum    vacuumer
	analyze   analyzer
}

// New returns an idle Keeper.
func New(cfg Config) *Keeper {
	every := cfg.VacuumAfterClaims
	if every == 0 {
		every = defaultVacuumAfterClaims
	}
	return &Keeper{
		pool:        cfg.Pool,
		clock:       cfg.Clock,
		log:         cfg.Logger,
		vacuumEvery: every,
		readAhead:   newReadAhead(min(cfg.SharedBuffers, warmMaxUnits)),
	}
}

// Pos is a unit's place in claim order (priority descending, then key).
type Pos struct {
	Priority float64
	Key      []byte
}

// After reports whether p comes after q in claim order.
func (p Pos) After(q Pos) bool {
	if p.Priority != q.Priority {
		return p.Priority < q.Priority
	}
	return bytes.Compare(p.Key, q.Key) > 0
}

// Claiming: a statement is about to claim n units of spec.
func (k *Keeper) Claiming(spec int64, n int) { k.claimingUnits(spec, n) }

// Claimed: a statement claimed n units of spec, the last of them in claim
// order at last.
func (k *Keeper) Claimed(spec int64, n int, last Pos) { k.claimedUnits(spec, n, last) }

// Committed: a transaction leased n units.
func (k *Keeper) Committed(n int) { k.noteClaimed(n) }

// Added: n units were added to spec.
func (k *Keeper) Added(spec int64, n int) {
	k.noteAdded(n)
	k.warmAfterAdds(spec, n)
}

// Close stops the machinery and waits for what it runs.
func (k *Keeper) Close() {
	k.analyze.run.wait()
	k.vacuum.run.wait()
	k.readAhead.close()
}

// Runs counts what a Keeper ran.
type Runs struct {
	ReadAheads int64 // read-aheads started (claims' and warms')
	Vacuums    int64 // VACUUMs of work_unit run to the end
}

// Settle waits for the read-aheads and the VACUUM under way and returns
// what the Keeper ran so far. It may be called at any time.
func (k *Keeper) Settle() Runs {
	k.readAhead.settle()
	k.vacuum.run.settle()
	return Runs{ReadAheads: k.readAhead.runs.Load(), Vacuums: k.vacuum.runs.Load()}
}
