package postgres

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// Claims without the scheduler's read. A get_work normally costs its
// claims transaction two round trips: the read of candidates.sql, the
// choice in Go (schedclaims.go), then the claim. When the last read for a
// namespace and spec filter found one spec the scheduler could choose
// (the usual case for workers draining one spec), the next get_work with
// that filter guesses it: the request is checked in Go against the spec
// as last read (soleSpecs.guess: coordinate.ChooseWorkSpec over that
// spec alone), and the claim statement runs at once, in the first round
// trip, behind a guard (queries/claim_guard.sql) that checks, at the
// claim's own snapshot, that the spec is still the only one the
// scheduler could choose and still has the settings the request was
// checked against. So the guarded claim leases exactly what the read and
// claim would have. When the guard fails the claim leases nothing, the
// guess is forgotten and the get_work goes through the committer again
// with the read (GetWork). docs/postgres.md, "Fourth pass: claims
// without the scheduler's read", has what this saves.

var (
	//go:embed queries/claim_guard.sql
	claimGuardText string
	// The guarded forms of claim.sql and claim_many.sql: their guard
	// arguments follow their own.
	claimGuessSQL     = guarded(claimSQL, 9)
	claimManyGuessSQL = guarded(claimManySQL, 8)
)

const (
	// guardCond keeps a guarded claim from taking units when the guard
	// found the guess wrong.
	guardCond = "AND EXISTS (SELECT FROM guard)"
	// guardRow marks that the guard held: a row of req -1
	// (collectClaims), so an empty claim tells a held guard (no units
	// to lease, as a claim after the read would have found) from a
	// failed one.
	guardRow = `UNION ALL SELECT -1, '\x'::bytea, false, '\x'::bytea, 0::float8, 0::bigint FROM guard`
)

// guarded is claim statement text with claim_guard.sql put in at its
// markers, the guard's arguments numbered from first.
func guarded(text string, first int) string {
	guard := strings.TrimSpace(commentLines.ReplaceAllString(withFragments(claimGuardText), ""))
	guard = strings.NewReplacer(
		"$guard_filter", fmt.Sprintf("$%d", first),
		"$guard_now", fmt.Sprintf("$%d", first+1),
		"$guard_max_getwork", fmt.Sprintf("$%d", first+2),
		"$guard_min_gb", fmt.Sprintf("$%d", first+3),
	).Replace(guard)
	for _, m := range []struct{ marker, with string }{
		{"/*guard*/", guard}, {"/*guard_cond*/", guardCond}, {"/*guard_row*/", guardRow},
	} {
		if strings.Count(text, m.marker) != 1 {
			panic("postgres: claim statement without exactly one " + m.marker)
		}
		text = strings.Replace(text, m.marker, m.with, 1)
	}
	return text
}

// soleSpecs remembers, for each spec filter of a namespace, the spec the
// last scheduler read found to be the only one with units to hand out.
// The zero value is ready.
type soleSpecs struct {
	mu    sync.Mutex
	specs map[string]specRow // by readKey's filter

	// Counts, for tests: guarded claims whose guard held or failed.
	held, failed atomic.Int64
}

// remember records what a read for filter found: the spec the next
// get_work with that filter may guess, or none. Only a spec the guard
// can check qualifies: no runtime (so no task rule) and no max_running
// (its claims depend on counts the guard does not pass on).
func (s *soleSpecs) remember(filter string, cands []candidate, sc []coordinate.SpecCandidate) {
	sole := -1
	for i := range cands {
		if cands[i].available > 0 || sc[i].ContinuousReady {
			if sole != -1 {
				sole = -1
				break
			}
			sole = i
		}
	}
	ok := sole >= 0 && cands[sole].available > 0 && guessable(&cands[sole].row.spec.Meta)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		delete(s.specs, filter)
		return
	}
	if s.specs == nil {
		s.specs = map[string]specRow{}
	}
	s.specs[filter] = *cands[sole].row
}

func (s *soleSpecs) forget(filter string) {
	s.mu.Lock()
	delete(s.specs, filter)
	s.mu.Unlock()
}

// guessable reports whether the guard can check a spec's claims: the
// rules it leaves to Go must depend only on the settings it compares.
func guessable(m *coordinate.WorkSpecMeta) bool {
	return m.MaxRunning == 0 && m.Runtime == ""
}

// guess is g's claim of the spec remembered for its filter when the
// scheduler would choose that spec for g were it the only one with
// available units, or nil. The guard checks the rest.
func (s *soleSpecs) guess(g *getRequest) *claimRequest {
	if g.noGuess {
		return nil
	}
	filter := g.readKey().filter
	s.mu.Lock()
	row, ok := s.specs[filter]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	if _, _, ok := g.ns.choose([]candidate{{row: &row, available: 1, hasBest: true, chooseable: true}}, g.req, g.now); !ok {
		return nil
	}
	return g.newClaim(row, coordinate.WorkCount(&row.spec.Meta, 0, g.req.MaxJobs))
}

// guessStmt is one guarded claim statement: claims on one spec, made by
// get_work requests naming one filter.
type guessStmt struct {
	filter string
	names  []string // the filter as the requests gave it
	claims []*claimRequest
	gets   []*getRequest // gets[i] made claims[i]
}

// planGuesses takes out of gets the requests whose claims are guessed,
// as statements; the rest read first (schedclaims.go). A request whose
// caller gave up claims nothing, as in schedReads.choose.
func planGuesses(gets []*getRequest) (stmts []guessStmt, rest []*getRequest) {
	type key struct {
		filter string
		spec   int64
	}
	byKey := map[key][]*getRequest{}
	var keys []key
	for _, g := range gets {
		g.claim, g.continuous, g.alone, g.missed = nil, nil, false, false
		cl := g.ns.sole.guess(g)
		if cl == nil {
			rest = append(rest, g)
			continue
		}
		if g.item != nil && g.item.state.Load() == itemAbandoned {
			continue
		}
		g.claim = cl
		k := key{g.readKey().filter, cl.spec.id}
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], g)
	}
	for _, k := range keys {
		byClaim := map[*claimRequest]*getRequest{}
		var claims []*claimRequest
		for _, g := range byKey[k] {
			byClaim[g.claim] = g
			claims = append(claims, g.claim)
		}
		for _, grp := range groupClaims(claims) {
			st := guessStmt{filter: k.filter, names: byKey[k][0].req.WorkSpecs, claims: grp}
			for _, cl := range grp {
				st.gets = append(st.gets, byClaim[cl])
			}
			stmts = append(stmts, st)
		}
	}
	return stmts, rest
}

// queue queues the guarded claim, after its claims' own arguments the
// guard's: the filter, the latest time of its requests (a spec
// continuous-ready for any of them counts), and the settings the
// requests were checked against.
func (st *guessStmt) queue(b *pgx.Batch) {
	sql, args := claimStatement(st.claims)
	switch sql {
	case claimSQL:
		sql = claimGuessSQL
	case claimManySQL:
		sql = claimManyGuessSQL
	default:
		panic("postgres: guessed claim of a spec with max_running")
	}
	latest := st.claims[0].now
	for _, cl := range st.claims {
		if cl.now.After(latest) {
			latest = cl.now
		}
	}
	m := &st.claims[0].spec.spec.Meta
	b.Queue(sql, append(args, filterNames(st.names), latest.UnixNano(), int32(m.MaxGetwork), m.MinGB)...)
}

// read reads the guarded claim's results. When the guard failed, the
// requests claimed nothing and go round again with the read.
func (st *guessStmt) read(rows pgx.Rows) error {
	held, err := collectClaims(rows, st.claims)
	if err != nil {
		return err
	}
	sole := &st.gets[0].ns.sole
	if held {
		sole.held.Add(1)
		return nil
	}
	sole.failed.Add(1)
	sole.forget(st.filter)
	for _, g := range st.gets {
		g.claim, g.missed = nil, true
	}
	return nil
}
