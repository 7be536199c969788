package postgres

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// guessCounts returns how many guarded claims held and failed since the
// last call.
func (e *fastEnv) guessCounts() (held, failed int64) {
	s := &e.ns.(*watchedNamespace).ns.sole
	return s.held.Swap(0), s.failed.Swap(0)
}

func (e *fastEnv) getWork(filter []string, n int) []coordinate.Attempt {
	e.t.Helper()
	as, err := e.ns.GetWork(e.t.Context(), coordinate.WorkRequest{
		Worker: coordinate.Name{Bytes: "w", Text: true}, WorkSpecs: filter, MaxJobs: n, LeaseTime: time.Minute})
	if err != nil {
		e.t.Fatal(err)
	}
	return as
}

func specsOf(as []coordinate.Attempt) string {
	var s []string
	for _, a := range as {
		s = append(s, a.Spec.Bytes+"/"+a.Key.Bytes)
	}
	return strings.Join(s, " ")
}

// TestGuessedClaimsSkipTheRead: once a read found one spec to hand out,
// the next get_work calls claim it without reading, by the guarded
// statement, and get the units a read would have given them.
func TestGuessedClaimsSkipTheRead(t *testing.T) {
	e := newFastEnv(t)
	e.spec(map[string]any{"name": "s"})
	e.add("s", numbered(10)...)
	for i, want := range []string{"s/u00000", "s/u00001 s/u00002", "s/u00003", "s/u00004 s/u00005 s/u00006"} {
		if got := specsOf(e.getWork(nil, len(strings.Fields(want)))); got != want {
			t.Fatalf("get_work %d: %s, want %s", i, got, want)
		}
	}
	if held, failed := e.guessCounts(); held != 3 || failed != 0 {
		t.Errorf("guarded claims held %d and failed %d times, want 3 and 0 (the first get_work reads)", held, failed)
	}
	// Draining the spec ends the guesses: the claim of the last units
	// holds, the next guess fails (no units left) and reads, and the
	// get_work after it reads without guessing.
	e.getWork(nil, 3)
	if as := e.getWork(nil, 1); len(as) != 0 {
		t.Fatalf("get_work of a drained spec: %s", specsOf(as))
	}
	if as := e.getWork(nil, 1); len(as) != 0 {
		t.Fatalf("get_work of a drained spec: %s", specsOf(as))
	}
	if held, failed := e.guessCounts(); held != 1 || failed != 1 {
		t.Errorf("after the drain: guarded claims held %d and failed %d times, want 1 and 1", held, failed)
	}
}

// TestGuessFallsBackToTheRead: when what the guess assumed changed
// since the read (another spec got better work, the spec was paused or
// got max_running, another spec became continuous-ready), the guard
// fails and get_work answers as the scheduler decides.
func TestGuessFallsBackToTheRead(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.spec(map[string]any{"name": "a", "priority": 1})
	e.add("a", numbered(10)...)
	e.getWork(nil, 1) // reads: a is the sole spec

	e.spec(map[string]any{"name": "b", "priority": 5})
	e.add("b", numbered(1)...)
	if got := specsOf(e.getWork(nil, 1)); got != "b/u00000" {
		t.Fatalf("with b of higher priority: %s, want b/u00000", got)
	}
	if held, failed := e.guessCounts(); held != 0 || failed != 1 {
		t.Errorf("guarded claims held %d and failed %d times, want 0 and 1", held, failed)
	}

	e.getWork(nil, 1) // reads again: a is the sole spec again (b drained)
	yes := true
	if err := e.ns.ControlWorkSpec(ctx, "a", coordinate.WorkSpecControl{Paused: &yes}); err != nil {
		t.Fatal(err)
	}
	if as := e.getWork(nil, 1); len(as) != 0 {
		t.Fatalf("get_work with a paused: %s", specsOf(as))
	}
	no := false
	if err := e.ns.ControlWorkSpec(ctx, "a", coordinate.WorkSpecControl{Paused: &no}); err != nil {
		t.Fatal(err)
	}
	e.getWork(nil, 1) // reads: a is the sole spec
	pending := len(e.rows(`SELECT key::text FROM work_unit u JOIN work_spec s ON s.id = u.spec_id
		WHERE s.name = 'a' AND u.status = 3`))
	limit := pending
	if err := e.ns.ControlWorkSpec(ctx, "a", coordinate.WorkSpecControl{MaxRunning: &limit}); err != nil {
		t.Fatal(err)
	}
	if as := e.getWork(nil, 1); len(as) != 0 {
		t.Fatalf("get_work with a's max_running reached: %s", specsOf(as))
	}
	if held, failed := e.guessCounts(); held != 0 || failed < 2 {
		t.Errorf("guarded claims held %d and failed %d times, want 0 and at least 2", held, failed)
	}
}

// TestGuardAgreesWithScheduler: for every spec a guess could name, in
// namespaces where the scheduler's rules decide differently (mixed
// priorities and weights, paused specs, max_running reached, delayed
// units, continuous specs, filters), the guarded claim
// (queries/claim_guard.sql, which mirrors coordinate.ChooseWorkSpec for
// one spec) leases exactly the units the read-then-claim path leases
// (the read probing every spec, coordinate.ChooseWorkSpec in Go, then
// claim.sql), or its guard fails and it leases nothing. The guard must
// hold where one spec is the only choice.
func TestGuardAgreesWithScheduler(t *testing.T) {
	delayed := func(n int) []coordinate.WorkUnitInput {
		in := numbered(n)
		for i := range in {
			in[i].Delay = time.Hour
		}
		return in
	}
	prio := func(n int, p float64) []coordinate.WorkUnitInput {
		in := numbered(n)
		for i := range in {
			in[i].Priority = &p
		}
		return in
	}
	type spec struct {
		def    map[string]any
		units  []coordinate.WorkUnitInput
		lease  int  // units leased before the check
		paused bool // paused before the check
	}
	cases := []struct {
		name   string
		specs  []spec
		filter []string
		holds  []string // specs whose guard must hold
	}{
		{"one spec", []spec{{def: map[string]any{"name": "a"}, units: numbered(3)}}, nil, []string{"a"}},
		{"mixed priorities", []spec{
			{def: map[string]any{"name": "a", "priority": 1}, units: numbered(3)},
			{def: map[string]any{"name": "b", "priority": 5}, units: numbered(3)},
		}, nil, nil},
		{"mixed weights and unit priorities", []spec{
			{def: map[string]any{"name": "a", "weight": 1}, units: prio(3, 9)},
			{def: map[string]any{"name": "b", "weight": 100}, units: numbered(3)},
		}, nil, nil},
		{"other spec paused", []spec{
			{def: map[string]any{"name": "a"}, units: numbered(3)},
			{def: map[string]any{"name": "b", "priority": 5}, units: numbered(3), paused: true},
		}, nil, []string{"a"}},
		{"other spec drained", []spec{
			{def: map[string]any{"name": "a"}, units: numbered(3)},
			{def: map[string]any{"name": "b", "priority": 5}, units: numbered(1), lease: 1},
		}, nil, []string{"a"}},
		{"other spec zero weight", []spec{
			{def: map[string]any{"name": "a"}, units: numbered(3)},
			{def: map[string]any{"name": "b", "priority": 5, "weight": 0}, units: numbered(3)},
		}, nil, []string{"a"}},
		{"max_running reached", []spec{
			{def: map[string]any{"name": "a", "priority": 5, "max_running": 1}, units: numbered(3), lease: 1},
			{def: map[string]any{"name": "b"}, units: numbered(3)},
		}, nil, nil},
		{"max_running not reached", []spec{
			{def: map[string]any{"name": "a", "max_running": 2}, units: numbered(3)},
		}, nil, nil},
		{"only delayed units", []spec{{def: map[string]any{"name": "a"}, units: delayed(3)}}, nil, []string{"a"}},
		{"other spec's units delayed", []spec{
			{def: map[string]any{"name": "a"}, units: numbered(3)},
			{def: map[string]any{"name": "b", "priority": 5}, units: delayed(3)},
		}, nil, nil},
		{"continuous spec ready", []spec{
			{def: map[string]any{"name": "a"}, units: numbered(3)},
			{def: map[string]any{"name": "c", "continuous": true, "priority": 5}},
		}, nil, nil},
		{"filter", []spec{
			{def: map[string]any{"name": "a"}, units: numbered(3)},
			{def: map[string]any{"name": "b", "priority": 5}, units: numbered(3)},
		}, []string{"a"}, []string{"a"}},
		{"runtime", []spec{{def: map[string]any{"name": "a", "runtime": "go"}, units: numbered(3)}}, nil, nil},
		{"max_getwork", []spec{{def: map[string]any{"name": "a", "max_getwork": 2}, units: numbered(5)}}, nil, []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newFastEnv(t)
			ctx := t.Context()
			for _, s := range tc.specs {
				e.spec(s.def)
				name := s.def["name"].(string)
				if len(s.units) > 0 {
					e.add(name, s.units...)
				}
				if s.lease > 0 {
					e.claim(name, s.lease)
				}
				if s.paused {
					if err := e.ns.ControlWorkSpec(ctx, name, coordinate.WorkSpecControl{Paused: &s.paused}); err != nil {
						t.Fatal(err)
					}
				}
			}
			ns := e.ns.(*watchedNamespace).ns
			req := coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}, WorkSpecs: tc.filter,
				MaxJobs: 3, LeaseTime: time.Minute}
			now := e.clock.Now()
			g := &getRequest{ns: ns, req: req, now: now, expires: now.Add(time.Minute)}

			// The read-then-claim path, rolled back.
			cands, err := ns.candidates(ctx, req, now)
			if err != nil {
				t.Fatal(err)
			}
			var want []coordinate.Attempt
			if sc, i, ok := ns.choose(cands, req, now); ok && sc[i].Available > 0 {
				c := &cands[i]
				cl := g.newClaim(*c.row, coordinate.WorkCount(&c.row.spec.Meta, int(c.pending), req.MaxJobs))
				sql, args := claimStatement([]*claimRequest{cl})
				if cl.capped() {
					sql = claimSQL // the cap only lowers n, already WorkCount's
				}
				e.rolledBack(func(tx pgx.Tx) {
					rows, err := tx.Query(ctx, sql, args...)
					if err == nil {
						_, err = collectClaims(rows, []*claimRequest{cl})
					}
					if err != nil {
						t.Fatal(err)
					}
				})
				want = cl.attempts
			}

			for _, c := range cands {
				name := c.row.spec.Name.Bytes
				ns.sole.specs = map[string]specRow{g.readKey().filter: *c.row}
				cl := ns.sole.guess(g)
				if cl == nil || !guessable(&c.row.spec.Meta) {
					if slices.Contains(tc.holds, name) {
						t.Errorf("no guess of %s", name)
					}
					continue
				}
				g.claim, g.missed = cl, false
				st := guessStmt{filter: g.readKey().filter, names: req.WorkSpecs, claims: []*claimRequest{cl},
					gets: []*getRequest{g}}
				e.rolledBack(func(tx pgx.Tx) {
					b := &pgx.Batch{}
					b.Queue(genericPlans)
					b.Queue(candidatesSettings)
					st.queue(b)
					br := tx.SendBatch(ctx, b)
					defer br.Close()
					for range 2 {
						if _, err := br.Exec(); err != nil {
							t.Fatal(err)
						}
					}
					rows, err := br.Query()
					if err == nil {
						err = st.read(rows)
					}
					if err != nil {
						t.Fatal(err)
					}
				})
				held := !g.missed
				if held != slices.Contains(tc.holds, name) {
					t.Errorf("guard of %s held: %v, want %v", name, held, !held)
				}
				if !held {
					continue
				}
				if got, w := specsOf(cl.attempts), specsOf(want); got != w {
					t.Errorf("guarded claim of %s leased %q, the scheduler's path %q", name, got, w)
				}
			}
		})
	}
}

// rolledBack runs fn in a transaction it rolls back.
func (e *fastEnv) rolledBack(fn func(pgx.Tx)) {
	e.t.Helper()
	tx, err := e.b.pool.Begin(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	defer tx.Rollback(e.t.Context()) //nolint:errcheck // rolled back on purpose
	fn(tx)
}
