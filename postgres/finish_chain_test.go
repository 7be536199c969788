package postgres

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// chainCase is a batch of updates to apply, for comparing the fast
// chaining finish (finish_chain.sql) with the general path.
type chainCase struct {
	setup func(e *fastEnv)
	// then runs after every available unit was claimed, before the batch.
	then func(e *fastEnv)
	upds []chainUpdate
}

type chainUpdate struct {
	spec, key string
	upd       coordinate.WorkUnitUpdate
	// lease: finish through the lease of the attempt claimed for the unit
	// (UpdateAttempt), else as update_work_unit.
	lease bool
}

// run applies c's updates as one committer batch on a fresh schema, all
// forced onto the general path when general, and returns every error,
// how many updates took the fast path and fell through, and a dump of
// the namespace: every unit of every spec with all its fields, the
// counts and event counters of each spec, and the groups.
func (c chainCase) run(t *testing.T, general bool) (errs []error, fast, fell int64, dump string) {
	t.Helper()
	e := newFastEnv(t)
	ctx := t.Context()
	c.setup(e)
	held := map[unitKey]int64{}
	nsImpl := e.ns.(*watchedNamespace).ns
	for _, s := range specNames(t, e) {
		us, err := e.ns.ListWorkUnits(ctx, s, coordinate.WorkUnitQuery{Statuses: []coordinate.Status{coordinate.StatusAvailable}})
		if err != nil {
			t.Fatal(err)
		}
		if len(us) == 0 {
			continue
		}
		for _, a := range e.claim(s, len(us)) {
			held[unitKey{nsImpl.id, s, a.Key.Bytes}] = a.ID
		}
	}
	if c.then != nil {
		c.then(e)
	}
	e.clock.Add(1000)
	now := e.clock.Now()
	var items []*commitItem
	for _, u := range c.upds {
		r := &updateRequest{ns: nsImpl, spec: u.spec, key: u.key, upd: u.upd, now: now, slow: general}
		if u.lease {
			id := held[r.unit()]
			r.leaseID = &id
		}
		items = append(items, &commitItem{upd: r, done: make(chan error, 1)})
	}
	e.paths()
	e.b.commits.apply(items)
	for _, it := range items {
		errs = append(errs, <-it.done)
	}
	fast, fell = e.paths()
	return errs, fast, fell, dumpNamespace(t, e)
}

// dumpNamespace describes everything a chaining finish may change.
func dumpNamespace(t *testing.T, e *fastEnv) string {
	t.Helper()
	ctx := t.Context()
	var out strings.Builder
	specs := specNames(t, e)
	stats, err := e.ns.(coordinate.StatsReader).Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]bool{}
	for _, s := range specs {
		us, err := e.ns.ListWorkUnits(ctx, s, coordinate.WorkUnitQuery{})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			fmt.Fprintf(&out, "%s/%q text=%v data=%x status=%v prio=%v exp=%v worker=%v nb=%v att=%d deps=%v group=%q\n",
				s, u.Key.Bytes, u.Key.Text, []byte(u.Data), u.Status, u.Priority, u.Expiration.UnixNano(),
				u.Worker, u.NotBefore.UnixNano(), u.Attempts, u.DependsOn, u.Group)
			if u.Group != "" {
				groups[u.Group] = true
			}
		}
		counts, err := e.ns.CountWorkUnits(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%s counts %v\n", s, counts)
	}
	for _, ss := range stats.Specs {
		fmt.Fprintf(&out, "stats %q %v oldest=%v events=%+v\n", ss.Name.Bytes, ss.Counts, ss.OldestAvailable.UnixNano(), *ss.Events)
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		gs, err := e.ns.GroupStatus(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "group %q %v progress=%v\n", g, gs.Counts, gs.LastProgress.UnixNano())
	}
	return out.String()
}

// specNames lists the namespace's specs in name order.
func specNames(t *testing.T, e *fastEnv) []string {
	t.Helper()
	specs, _, err := e.ns.ListWorkSpecs(t.Context(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name.Bytes)
	}
	sort.Strings(names)
	return names
}

// compare runs c both ways and fails when they differ in anything but
// the path taken; it returns the fast run's path counts.
func (c chainCase) compare(t *testing.T) (fast, fell int64) {
	t.Helper()
	gErrs, _, _, gDump := c.run(t, true)
	fErrs, fast, fell, fDump := c.run(t, false)
	for i := range gErrs {
		if fmt.Sprint(gErrs[i]) != fmt.Sprint(fErrs[i]) {
			t.Errorf("update %d: %v, the general path gives %v", i, fErrs[i], gErrs[i])
		}
	}
	if gDump != fDump {
		t.Errorf("after the batch:\n%s\nthe general path leaves:\n%s", fDump, gDump)
	}
	return fast, fell
}

var bin = coordinate.Name{Bytes: "\xff\x00b", Text: false}

// TestFastChainMatchesGeneral: finishes whose data chains units, in one
// batch, through finish_chain.sql give exactly the general path's result:
// map and list outputs, data, explicit and inherited priorities, meta
// priority, group and delay, a key named twice in one output (the last
// wins), binary keys on both sides, a `then` naming no spec, a spec
// without `then`, finishes through a lease and without.
func TestFastChainMatchesGeneral(t *testing.T) {
	c := chainCase{
		setup: func(e *fastEnv) {
			e.chainingSpecs()
			e.spec(map[string]any{"name": "lost", "then": "nowhere"})
			e.spec(map[string]any{"name": "plain"})
			p5 := 5.0
			f1 := unit("f1", map[string]any{})
			f1.Priority = &p5
			f1.Group = "g0"
			b := coordinate.WorkUnitInput{Key: bin, Data: []byte{0xa0}}
			e.add("first", f1, unit("f2", map[string]any{}), unit("f3", map[string]any{}), b)
			e.add("lost", unit("l1", map[string]any{}))
			e.add("plain", unit("p1", map[string]any{}))
		},
		upds: []chainUpdate{
			{spec: "first", key: "f1", upd: finishWith(map[string]any{"m1": map[string]any{"x": 1}, "m2": map[string]any{}}), lease: true},
			{spec: "first", key: "f2", upd: finishWith([]any{
				"s1",
				[]any{"s2", map[string]any{"d": 2}},
				[]any{"s3", map[string]any{"d": 3}, map[string]any{"priority": 7, "group": "g1"}},
				[]any{"s4", map[string]any{}, map[string]any{"delay": 60}, 2.5},
				[]any{"s1", map[string]any{"dup": true}},
				[]any{"bad"},
			})},
			{spec: "first", key: "f3", upd: finishWith([]any{[]byte("\xfe\x01"), []any{[]byte("raw"), map[string]any{}, map[string]any{"group": "g1"}}})},
			{spec: "first", key: bin.Bytes, upd: finishWith([]any{"from-binary"}), lease: true},
			{spec: "lost", key: "l1", upd: finishWith([]any{"never"})},
			{spec: "plain", key: "p1", upd: finishWith([]any{"nothing"})},
		},
	}
	if fast, fell := c.compare(t); fast != 6 || fell != 0 {
		t.Errorf("fast path took %d, fell through %d; want 6, 0", fast, fell)
	}
}

// TestFastChainFallsThrough: what finish_chain.sql leaves alone gets the
// general path's result: a key that exists in the target spec (finished,
// pending, blocked: re-added by the general path's rules), a lease that
// ended, a stale lease id, a missing unit and spec; units with
// dependencies, and a key another finish of the batch names, go to the
// general path at once.
func TestFastChainFallsThrough(t *testing.T) {
	c := chainCase{
		setup: func(e *fastEnv) {
			e.chainingSpecs()
			e.add("second", unit("done", map[string]any{}), unit("held", map[string]any{}))
			waiting := unit("waiting", map[string]any{})
			waiting.DependsOn = []coordinate.UnitRef{{Spec: "first", Key: "f9"}}
			e.add("second", waiting)
			e.claim("second", 2)
			if err := e.ns.UpdateWorkUnit(e.t.Context(), "second", "done", finish); err != nil {
				e.t.Fatal(err)
			}
			e.add("first", numbered(8)...)
			e.add("first", unit("f9", map[string]any{}))
		},
		upds: []chainUpdate{
			{spec: "first", key: "u00000", upd: finishWith([]any{"new1", []any{"done", map[string]any{"again": 1}}})},
			{spec: "first", key: "u00001", upd: finishWith([]any{[]any{"held", map[string]any{"again": 2}}})},
			{spec: "first", key: "u00002", upd: finishWith([]any{[]any{"waiting", map[string]any{"again": 3}}})},
			{spec: "first", key: "u00003", upd: finishWith([]any{[]any{"dep", map[string]any{}, map[string]any{"depends_on": []any{[]any{"first", "f9"}}}}})},
			{spec: "first", key: "u00004", upd: finishWith([]any{"twice", "new4"})},
			{spec: "first", key: "u00005", upd: finishWith([]any{[]any{"twice", map[string]any{"second": true}}})},
			{spec: "first", key: "u00006", upd: finishWith([]any{"new6"}), lease: true},
			{spec: "first", key: "nope", upd: finishWith([]any{"never"})},
			{spec: "nope", key: "u00007", upd: finishWith([]any{"never2"})},
		},
	}
	// Fast: u00004 and u00006; u00000-u00002 and the missing ones fall
	// through; u00003 and u00005 go to the general path at once.
	if fast, fell := c.compare(t); fast != 2 || fell != 5 {
		t.Errorf("fast path took %d, fell through %d; want 2, 5", fast, fell)
	}

	// Leases that ended, and a stale lease id.
	expired := chainCase{
		setup: func(e *fastEnv) {
			e.chainingSpecs()
			e.add("first", numbered(2)...)
		},
		upds: []chainUpdate{
			{spec: "first", key: "u00000", upd: finishWith([]any{"late"})},
			{spec: "first", key: "u00001", upd: finishWith([]any{"stale"}), lease: true},
		},
	}
	expired.then = func(e *fastEnv) { e.clock.Add(2 * time.Minute) }
	if fast, fell := expired.compare(t); fast != 0 || fell != 2 {
		t.Errorf("ended leases: fast path took %d, fell through %d; want 0, 2", fast, fell)
	}
}

// TestFastChainConcurrentInsert: a key to chain that another transaction
// inserts while the fast statement runs makes its INSERT fail with a
// unique violation; the batch is rerun and the general path re-adds the
// unit the other transaction added, as if it had come first.
func TestFastChainConcurrentInsert(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.chainingSpecs()
	e.add("first", unit("f", map[string]any{}))
	e.claim("first", 1)
	e.paths()

	// Another transaction inserts second/k and holds it uncommitted.
	tx, err := e.b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // committed below
	var secondID int64
	if err := tx.QueryRow(ctx, "SELECT id FROM work_spec WHERE name = 'second'").Scan(&secondID); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO work_unit (spec_id, key, key_text, data, status, priority, available_since)
		VALUES ($1, 'k', true, '\xa0', 1, 0, 0)`, secondID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- e.ns.UpdateWorkUnit(ctx, "first", "f", finishWith([]any{[]any{"k", map[string]any{"mine": 1}}}))
	}()
	// Wait until the finish waits for that insert, then commit it.
	waitFor(t, "the finish to wait for the insert", func() bool {
		var n int
		err := e.b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%finish.sql for finishes whose data names units%'`).Scan(&n)
		return err == nil && n > 0
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fast, fell := e.paths(); fast != 0 || fell != 1 {
		t.Errorf("fast path took %d, fell through %d; want 0, 1", fast, fell)
	}
	us, err := e.ns.GetWorkUnits(ctx, "second", []string{"k"})
	if err != nil || len(us) != 1 {
		t.Fatalf("GetWorkUnits(second, k) = %v, %v", us, err)
	}
	if want, _ := cbor.Marshal(map[string]any{"mine": 1}); string(us[0].Data) != string(want) || us[0].Status != coordinate.StatusAvailable {
		t.Errorf("second/k: data %x status %v, want %x available", []byte(us[0].Data), us[0].Status, want)
	}
	if st := e.status("first", "f"); st != coordinate.StatusFinished {
		t.Errorf("first/f is %v, want finished", st)
	}
}

// TestFastChainHints: after a chaining finish of a spec fell through
// finish_chain.sql (here: its key exists, several units chaining one),
// the next chainSkips such finishes of the spec go to the general path
// at once, in their batch's transaction; the one after tries the fast
// statement again.
func TestFastChainHints(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.chainingSpecs()
	e.add("second", unit("merge", map[string]any{}))
	e.add("first", numbered(chainSkips+2)...)
	e.claim("first", chainSkips+2)
	e.paths()
	finishChaining := func(i int, key string) (fast, fell int64) {
		t.Helper()
		upd := finishWith([]any{[]any{key, map[string]any{"from": i}}})
		if err := e.ns.UpdateWorkUnit(ctx, "first", fmt.Sprintf("u%05d", i), upd); err != nil {
			t.Fatal(err)
		}
		return e.paths()
	}
	if fast, fell := finishChaining(0, "merge"); fast != 0 || fell != 1 {
		t.Errorf("first finish chaining an existing key: fast %d, fell through %d; want 0, 1", fast, fell)
	}
	for i := 1; i <= chainSkips; i++ {
		if fast, fell := finishChaining(i, "merge"); fast != 0 || fell != 0 {
			t.Errorf("finish %d: fast %d, fell through %d; want 0, 0 (the general path at once)", i, fast, fell)
		}
	}
	if fast, fell := finishChaining(chainSkips+1, "fresh"); fast != 1 || fell != 0 {
		t.Errorf("after %d skips: fast %d, fell through %d; want 1, 0", chainSkips, fast, fell)
	}
	us, err := e.ns.GetWorkUnits(ctx, "second", []string{"merge", "fresh"})
	if err != nil || len(us) != 2 {
		t.Fatalf("GetWorkUnits(second) = %v, %v", us, err)
	}
	for _, u := range us {
		want := map[string]int{"merge": chainSkips, "fresh": chainSkips + 1}[u.Key.Bytes]
		if raw, _ := cbor.Marshal(map[string]any{"from": want}); string(u.Data) != string(raw) || u.Status != coordinate.StatusAvailable {
			t.Errorf("second/%s: data %x status %v, want %x available", u.Key.Bytes, []byte(u.Data), u.Status, raw)
		}
	}
}
