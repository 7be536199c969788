package postgres

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// Dependency resolution under concurrency: two transactions changing two
// dependencies of one unit at once (two daemons, or one daemon's two
// committer transactions in flight) must leave the unit as one after the
// other would. Each test builds n triples in spec "s": d_i depends on a_i
// and b_i (addDepPairs), changes a_i and b_i at once, and checks every d_i.

// addDepPairs defines spec "s" and adds a_i, b_i and d_i (depending on
// both) for i < n.
func addDepPairs(t *testing.T, ns coordinate.Namespace, n int) {
	t.Helper()
	ctx := t.Context()
	raw, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns.SetWorkSpec(ctx, raw); err != nil {
		t.Fatal(err)
	}
	d, _ := cbor.Marshal(map[string]any{})
	var in []coordinate.WorkUnitInput
	for i := range n {
		a, b := pairKey('a', i), pairKey('b', i)
		in = append(in, coordinate.WorkUnitInput{Key: textName(a), Data: d}, coordinate.WorkUnitInput{Key: textName(b), Data: d},
			coordinate.WorkUnitInput{Key: textName(pairKey('d', i)), Data: d,
				DependsOn: []coordinate.UnitRef{{Spec: "s", Key: a}, {Spec: "s", Key: b}}})
	}
	if err := ns.AddWorkUnits(ctx, "s", in); err != nil {
		t.Fatal(err)
	}
}

// twoDaemons opens two backends on one fresh schema, as two daemons
// sharing a database, with the n triples added.
func twoDaemons(t *testing.T, n int) (ns1, ns2 coordinate.Namespace) {
	t.Helper()
	url := freshSchema(t)
	_, ns1 = openBackend(t, url, Options{MaxConns: 8})
	_, ns2 = openBackend(t, url, Options{MaxConns: 8})
	addDepPairs(t, ns1, n)
	return ns1, ns2
}

// failAll fails the units of keys through ns.
func failAll(t *testing.T, ns coordinate.Namespace, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if err := ns.UpdateWorkUnit(t.Context(), "s", k, statusUpdate(coordinate.StatusFailed)); err != nil {
			t.Fatal(err)
		}
	}
}

func pairKey(c byte, i int) string      { return fmt.Sprintf("%c%03d", c, i) }
func textName(s string) coordinate.Name { return coordinate.Name{Bytes: s, Text: true} }
func statusUpdate(s coordinate.Status) coordinate.WorkUnitUpdate {
	return coordinate.WorkUnitUpdate{Status: s}
}

// updateAtOnce runs, for every i < n, update a_i on ns1 with ua and b_i
// on ns2 with ub concurrently.
func updateAtOnce(t *testing.T, ns1, ns2 coordinate.Namespace, n int, ua, ub coordinate.WorkUnitUpdate) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		for _, u := range []struct {
			ns  coordinate.Namespace
			key string
			upd coordinate.WorkUnitUpdate
		}{{ns1, pairKey('a', i), ua}, {ns2, pairKey('b', i), ub}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := u.ns.UpdateWorkUnit(t.Context(), "s", u.key, u.upd); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
}

// checkDependents fails unless every d_i has status want.
func checkDependents(t *testing.T, ns coordinate.Namespace, n int, want coordinate.Status) {
	t.Helper()
	var keys []string
	for i := range n {
		keys = append(keys, pairKey('d', i))
	}
	us, err := ns.GetWorkUnits(t.Context(), "s", keys)
	if err != nil {
		t.Fatal(err)
	}
	wrong := 0
	for _, u := range us {
		if u.Status != want {
			if wrong < 5 {
				t.Logf("%s: status %v, depends on %v", u.Key.Bytes, u.Status, u.DependsOn)
			}
			wrong++
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d dependents not %v", wrong, n, want)
	}
}

// Both dependencies finished at once through two daemons: every d_i is
// AVAILABLE. Before migration 0013 each transaction could see the other's
// edge still there and leave d_i BLOCKED with no edge.
func TestConcurrentFinishesOfTwoDependencies(t *testing.T) {
	const n = 200
	ns1, ns2 := twoDaemons(t, n)
	updateAtOnce(t, ns1, ns2, n, statusUpdate(coordinate.StatusFinished), statusUpdate(coordinate.StatusFinished))
	checkDependents(t, ns1, n, coordinate.StatusAvailable)
}

// The same with one daemon and the fast path (leased units finished by
// UpdateAttempt), after a control run finishing them one after another.
func TestConcurrentFinishesOneDaemon(t *testing.T) {
	for _, concurrent := range []bool{false, true, true} {
		t.Run(fmt.Sprint("concurrent=", concurrent), func(t *testing.T) {
			const n = 100
			b, ns := openBackend(t, freshSchema(t), Options{MaxConns: 8})
			ctx := t.Context()
			addDepPairs(t, ns, n)
			as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: textName("w"), MaxJobs: 2 * n, LeaseTime: time.Hour})
			if err != nil || len(as) != 2*n {
				t.Fatalf("GetWork: %d, %v", len(as), err)
			}
			b.commits.fast.Store(0)
			byKey := map[string]coordinate.Attempt{}
			for _, a := range as {
				byKey[a.Key.Bytes] = a
			}
			fin := func(k string) {
				ref := coordinate.AttemptRef{Spec: "s", Key: k, ID: byKey[k].ID}
				if err := ns.UpdateAttempt(ctx, ref, statusUpdate(coordinate.StatusFinished)); err != nil {
					t.Error(err)
				}
			}
			var wg sync.WaitGroup
			for i := range n {
				a, bk := pairKey('a', i), pairKey('b', i)
				if !concurrent {
					fin(a)
					fin(bk)
					continue
				}
				wg.Add(2)
				go func() { defer wg.Done(); fin(a) }()
				go func() { defer wg.Done(); time.Sleep(time.Duration(i%7) * 100 * time.Microsecond); fin(bk) }()
			}
			wg.Wait()
			t.Logf("fast finishes: %d", b.commits.fast.Load())
			checkDependents(t, ns, n, coordinate.StatusAvailable)
		})
	}
}

// Both dependencies FAILED (so d_i is FAILED), then retried at once
// through two daemons: no dependency of d_i is failed, so d_i is BLOCKED
// again (each retry saw the other dependency still FAILED before
// deps_lock_dependents).
func TestConcurrentRetriesOfTwoFailedDependencies(t *testing.T) {
	const n = 100
	ns1, ns2 := twoDaemons(t, n)
	for i := range n {
		failAll(t, ns1, pairKey('a', i), pairKey('b', i))
	}
	updateAtOnce(t, ns1, ns2, n, statusUpdate(coordinate.StatusAvailable), statusUpdate(coordinate.StatusAvailable))
	checkDependents(t, ns1, n, coordinate.StatusBlocked)
}

// a_i FAILED (so d_i is FAILED), then a_i retried while b_i fails, at once
// through two daemons: b_i is FAILED afterwards, so d_i is FAILED, never
// BLOCKED on a failed dependency (the failure skipped d_i while its
// snapshot said FAILED, and the retry, committing after, blocked it).
func TestConcurrentRetryAndFailureOfTwoDependencies(t *testing.T) {
	const n = 100
	ns1, ns2 := twoDaemons(t, n)
	for i := range n {
		failAll(t, ns1, pairKey('a', i))
	}
	updateAtOnce(t, ns1, ns2, n, statusUpdate(coordinate.StatusAvailable), statusUpdate(coordinate.StatusFailed))
	checkDependents(t, ns1, n, coordinate.StatusFailed)
}

// d_i leased by hand while BLOCKED (b_i finished, a_i not), then a_i
// finished through one daemon while d_i is given back through the other:
// a_i is FINISHED, so d_i is AVAILABLE. The give-back read d_i's edge
// to a_i still there (StillWaiting: BLOCKED) while the finish, which
// locked only the BLOCKED dependents, skipped d_i (PENDING in its
// snapshot) and deleted the edge: d_i stayed BLOCKED with no edge.
func TestConcurrentFinishAndReleaseOfLeasedDependent(t *testing.T) {
	const n = 100
	ns1, ns2 := twoDaemons(t, n)
	lease := time.Hour
	var ds []string
	for i := range n {
		if err := ns1.UpdateWorkUnit(t.Context(), "s", pairKey('b', i), statusUpdate(coordinate.StatusFinished)); err != nil {
			t.Fatal(err)
		}
		if err := ns1.UpdateWorkUnit(t.Context(), "s", pairKey('d', i), coordinate.WorkUnitUpdate{Status: coordinate.StatusPending, LeaseTime: &lease}); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, pairKey('d', i))
	}
	us, err := ns1.GetWorkUnits(t.Context(), "s", ds[:1])
	if err != nil || us[0].Status != coordinate.StatusPending {
		t.Fatalf("d000 leased by hand: %v, %v", us[0], err)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := ns1.UpdateWorkUnit(t.Context(), "s", pairKey('a', i), statusUpdate(coordinate.StatusFinished)); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if err := ns2.UpdateWorkUnit(t.Context(), "s", pairKey('d', i), statusUpdate(coordinate.StatusAvailable)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	checkDependents(t, ns1, n, coordinate.StatusAvailable)
}

// TestSweepUnblocksFreedUnits: the lease sweep reads a unit's edges at its
// statement's snapshot, so a finish that deleted the last edge of a
// hand-leased BLOCKED unit and committed while the sweep statement ran
// left the unit BLOCKED with no edge. The sweep reports the units it
// blocked, and deps_unblock_free, run after it, makes those without an
// edge AVAILABLE. The race is inside one statement: a trigger of this
// test's own schema makes its outcome, deleting x's edge as the sweep
// blocks x, and the expiry runs as every call runs it (expireLeases).
func TestSweepUnblocksFreedUnits(t *testing.T) {
	clock := coordinate.NewFakeClock(time.Unix(1_700_000_000, 0))
	b, ns := openBackend(t, freshSchema(t), Options{Clock: clock, MaxConns: 4})
	ctx := t.Context()
	if _, err := b.pool.Exec(ctx, `
		CREATE FUNCTION drop_x_edge() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN DELETE FROM unit_dep WHERE spec_id = NEW.spec_id AND key = NEW.key; RETURN NULL; END $$;
		CREATE TRIGGER drop_x_edge AFTER UPDATE ON work_unit FOR EACH ROW
			WHEN (OLD.status = 3 AND NEW.status = 2 AND NEW.key = 'x') EXECUTE FUNCTION drop_x_edge()`); err != nil {
		t.Fatal(err)
	}
	raw, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns.SetWorkSpec(ctx, raw); err != nil {
		t.Fatal(err)
	}
	d, _ := cbor.Marshal(map[string]any{})
	on := func(k string) []coordinate.UnitRef { return []coordinate.UnitRef{{Spec: "s", Key: k}} }
	if err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{
		{Key: textName("dx"), Data: d}, {Key: textName("dy"), Data: d},
		{Key: textName("x"), Data: d, DependsOn: on("dx"), Group: "g"},
		{Key: textName("y"), Data: d, DependsOn: on("dy")},
	}); err != nil {
		t.Fatal(err)
	}
	// Leased by hand while BLOCKED, for a second.
	second := time.Second
	for _, k := range []string{"x", "y"} {
		if err := ns.UpdateWorkUnit(ctx, "s", k, coordinate.WorkUnitUpdate{Status: coordinate.StatusPending, LeaseTime: &second}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Add(2 * time.Second)
	if err := b.expireLeases(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	st, err := ns.GetWorkUnits(ctx, "s", []string{"x", "y"})
	if err != nil {
		t.Fatal(err)
	}
	if st[0] == nil || st[0].Status != coordinate.StatusAvailable || st[1] == nil || st[1].Status != coordinate.StatusBlocked {
		t.Fatalf("after the repair: x %+v, y %+v; want x AVAILABLE (no edge left), y BLOCKED (its edge stays)", st[0], st[1])
	}
	counts, err := ns.CountWorkUnits(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if counts[coordinate.StatusAvailable] != 3 || counts[coordinate.StatusBlocked] != 1 || counts[coordinate.StatusPending] != 0 {
		t.Errorf("counts %v, want 3 available (dx, dy, x), 1 blocked (y)", counts)
	}
	as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: textName("w"), MaxJobs: 3, LeaseTime: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 3 {
		t.Errorf("get_work leased %d units, want 3 (dx, dy and x)", len(as))
	}
}
