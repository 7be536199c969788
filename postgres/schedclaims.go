package postgres

import (
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// Scheduling inside the committer. A get_work goes to the committer
// (committer.go) as one request: the claims transaction of its batch reads
// the scheduler's view of each spec filter its requests name
// (candidates.sql), chooses a spec for each request in Go with
// coordinate.ChooseWorkSpec (namespace.choose), then claims the units in
// its next round trip (pipeline.go). So a get_work is one request to the
// committer and one transaction, instead of a read of its own followed by
// a claim in the next batch; what it sees was read after it arrived, and
// the requests of a batch that name the same filter share one read and
// their claims one statement (docs/postgres.md, "At 8 connections", has
// what this changed).

// getRequest is one get_work waiting for the committer.
type getRequest struct {
	ns      *namespace
	req     coordinate.WorkRequest
	now     time.Time
	expires time.Time
	item    *commitItem // the committer's item carrying it (set by planBatch)

	// Results, set by each run of the batch.
	claim      *claimRequest // the claim chosen; nil: none
	continuous *specRow      // a continuous spec chosen with no units: the caller creates one
	alone      bool          // a max_running spec chosen from a shared read: the caller reads again alone
	missed     bool          // a guessed claim whose guard failed: the caller submits again (schedguess.go)

	noGuess bool // read, do not guess (set for the submission after a miss)
}

// newClaim is the claim of n units of spec for g: its caller's worker,
// byte bound, time and lease end.
func (g *getRequest) newClaim(spec specRow, n int) *claimRequest {
	return &claimRequest{ns: g.ns, spec: spec, n: n, maxBytes: g.req.MaxBytes,
		worker: g.req.Worker, now: g.now, expires: g.expires}
}

// readKey names the read a get request needs: its namespace and filter.
type readKey struct {
	ns     int64
	filter string
}

func (g *getRequest) readKey() readKey {
	return readKey{g.ns.id, filterKey(g.req.WorkSpecs)}
}

// filterKey is a spec filter as readKey and specRows name it.
func filterKey(specs []string) string { return strings.Join(specs, "\x00") }

// schedReads is stage 0 of a batch with get requests: one read per
// filter, shared by the requests naming it.
type schedReads struct {
	keys    []readKey
	byKey   map[readKey][]*getRequest
	results map[readKey][]candidate
	// missed are the keys whose read missed (specrows.go), to read
	// again with every row's settings; all says this is that read.
	missed []readKey
	all    bool
}

func newSchedReads(gets []*getRequest) *schedReads {
	s := &schedReads{byKey: map[readKey][]*getRequest{}, results: map[readKey][]candidate{}}
	for _, g := range gets {
		g.claim, g.continuous, g.alone = nil, nil, false
		k := g.readKey()
		if s.byKey[k] == nil {
			s.keys = append(s.keys, k)
		}
		s.byKey[k] = append(s.byKey[k], g)
	}
	return s
}

// queue queues the reads on b (inside the batch's transaction, after
// candidatesSettings), each at the time of the latest request sharing it:
// every key's, or, once a read missed, those that missed, with every
// row's settings.
func (s *schedReads) queue(b *pgx.Batch) {
	keys := s.keys
	if s.all {
		keys = s.missed
	}
	for _, k := range keys {
		gets := s.byKey[k]
		now := gets[0].now
		for _, g := range gets {
			if g.now.After(now) {
				now = g.now
			}
		}
		horizon := readAll
		if !s.all {
			horizon = gets[0].ns.specRows.horizon(k.filter)
		}
		b.Queue(candidatesSQL, k.ns, filterNames(gets[0].req.WorkSpecs), now.UnixNano(), false, horizon)
	}
}

// read reads the results of queue. Keys whose read missed are left in
// s.missed: queue them again with s.all set.
func (s *schedReads) read(br pgx.BatchResults) error {
	keys := s.keys
	if s.all {
		keys, s.missed = s.missed, nil
	}
	for _, k := range keys {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		cands, missed, err := collectCandidates(rows, &s.byKey[k][0].ns.specRows, k.filter)
		if err != nil {
			return err
		}
		if missed {
			s.missed = append(s.missed, k)
			continue
		}
		s.results[k] = cands
	}
	return nil
}

// choose runs the scheduler for every request and returns the claims to
// make.
func (s *schedReads) choose() []*claimRequest {
	var claims []*claimRequest
	for _, k := range s.keys {
		gets := s.byKey[k]
		remembered := false
		var buf []coordinate.SpecCandidate // each request's view, in turn
		for _, g := range gets {
			if g.item != nil && g.item.state.Load() == itemAbandoned {
				// The caller gave up while the read ran (a frozen
				// database's calls, say): lease nothing nobody waits for.
				continue
			}
			cands := s.results[k]
			sc, i, ok := g.ns.chooseWith(buf, cands, g.req, g.now)
			buf = sc
			if !remembered {
				g.ns.sole.remember(k.filter, cands, sc) // schedguess.go
				remembered = true
			}
			if !ok {
				continue
			}
			c := &cands[i]
			switch {
			case c.row.spec.Meta.MaxRunning != 0 && len(gets) > 1:
				// Every request sharing the read counts the same pending
				// units: read again alone.
				g.alone = true
			case sc[i].Available > 0:
				n := coordinate.WorkCount(&c.row.spec.Meta, int(c.pending), g.req.MaxJobs)
				if n > 0 {
					g.claim = g.newClaim(*c.row, n)
					claims = append(claims, g.claim)
				}
			default:
				row := *c.row
				g.continuous = &row
			}
		}
	}
	return claims
}

// filterNames is a get_work's spec filter as candidates.sql takes it.
func filterNames(specs []string) [][]byte {
	names := make([][]byte, len(specs))
	for i, n := range specs {
		names[i] = bytesOf(n)
	}
	return names
}
