package postgres

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/coordinated/coordinated/coordinate"
)

// finishWith is a finish whose data chains output.
func finishWith(output any) coordinate.WorkUnitUpdate {
	raw, _ := cbor.Marshal(map[string]any{"output": output})
	return coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished, Data: raw}
}

// TestChainsInOneBatch: the chaining finishes of one batch give the
// result of running them one by one: a job naming a key twice adds the
// last, a job re-adding a key an earlier job added wins, a job whose units would close a cycle adds nothing and
// drops no other job's units, a missing successor chains nothing.
func TestChainsInOneBatch(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.spec(map[string]any{"name": "a", "then": "b"})
	e.spec(map[string]any{"name": "b"})
	e.spec(map[string]any{"name": "c", "then": "nowhere"})
	e.add("a", numbered(5)...)
	e.add("c", numbered(1)...)
	e.claim("a", 5)
	e.claim("c", 1)
	nsImpl := e.ns.(*watchedNamespace).ns
	now := e.clock.Now()
	upds := []struct {
		spec, key string
		upd       coordinate.WorkUnitUpdate
	}{
		{"a", "u00000", finishWith([]any{"k1", "k2"})},
		{"a", "u00001", finishWith([]any{[]any{"k3", map[string]any{"v": 1}}, "k3"})},
		{"a", "u00002", finishWith([]any{[]any{"k1", map[string]any{"v": 2}}})},
		{"a", "u00003", finishWith([]any{[]any{"k9", map[string]any{}, map[string]any{"depends_on": []any{[]any{"b", "k9"}}}}})},
		{"c", "u00000", finishWith([]any{"x"})},
		{"a", "u00004", finishWith(map[string]any{"k4": map[string]any{}, "k2": map[string]any{"v": 3}})},
	}
	var items []*commitItem
	for _, u := range upds {
		items = append(items, &commitItem{upd: &updateRequest{ns: nsImpl, spec: u.spec, key: u.key, upd: u.upd, now: now}, done: make(chan error, 1)})
	}
	e.b.commits.apply(items)
	for i, it := range items {
		if err := <-it.done; err != nil {
			t.Errorf("update %d: %v", i, err)
		}
	}
	us, err := e.ns.ListWorkUnits(ctx, "b", coordinate.WorkUnitQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range us {
		var data map[string]any
		if err := cbor.Unmarshal(u.Data, &data); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s%v", u.Key.Bytes, data))
	}
	sort.Strings(got)
	if want := "[k1map[v:2] k2map[v:3] k3map[] k4map[]]"; fmt.Sprint(got) != want {
		t.Errorf("b holds %v, want %s", got, want)
	}
	counts, err := e.ns.CountWorkUnits(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if counts[coordinate.StatusAvailable] != 4 || len(counts) != 1 {
		t.Errorf("b counts %v, want 4 available", counts)
	}
}

// countingTx counts the statements sent through it.
type countingTx struct {
	dbtx
	n int
}

func (c *countingTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.n++
	return c.dbtx.Exec(ctx, sql, args...)
}

func (c *countingTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.n++
	return c.dbtx.Query(ctx, sql, args...)
}

func (c *countingTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.n++
	return c.dbtx.QueryRow(ctx, sql, args...)
}

// TestChainsMerged: chain jobs that commute cost one lookup of their
// target specs and one insert per target spec, however many there are.
func TestChainsMerged(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.spec(map[string]any{"name": "a", "then": "b"})
	e.spec(map[string]any{"name": "b"})
	nsImpl := e.ns.(*watchedNamespace).ns
	var jobs []chainJob
	for i := range 10 {
		jobs = append(jobs, chainJob{ns: nsImpl, from: &lockedUnit{then: "b"},
			units: []coordinate.WorkUnitInput{unit(fmt.Sprintf("k%d", i), map[string]any{})}, now: e.clock.Now()})
	}
	tx, err := e.b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	ct := &countingTx{dbtx: tx}
	d, g := newCountDelta(), groupBumps{}
	if _, _, err := runChains(ctx, ct, jobs, d, g); err != nil {
		t.Fatal(err)
	}
	if ct.n != 2 {
		t.Errorf("10 commuting chain jobs took %d statements, want 2 (lookup, insert)", ct.n)
	}
	if err := d.apply(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	counts, err := e.ns.CountWorkUnits(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if counts[coordinate.StatusAvailable] != 10 {
		t.Errorf("b counts %v, want 10 available", counts)
	}
}
