package postgres

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// TestConcurrentFinishesOfTwoDependencies: d_i depends on a_i and
// b_i; a_i and b_i are finished at the same moment by different callers
// (so by different committer transactions). Every d_i must end AVAILABLE:
// before migration 0013 each transaction could see the other's edge still
// there and leave d_i BLOCKED with no edge.
func TestConcurrentFinishesOfTwoDependencies(t *testing.T) {
	const n = 200
	url := freshSchema(t)
	_, ns1 := openBackend(t, url, Options{MaxConns: 8})
	_, ns2 := openBackend(t, url, Options{MaxConns: 8})
	ctx := t.Context()
	raw, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns1.SetWorkSpec(ctx, raw); err != nil {
		t.Fatal(err)
	}
	d, _ := cbor.Marshal(map[string]any{})
	name := func(s string) coordinate.Name { return coordinate.Name{Bytes: s, Text: true} }
	var in []coordinate.WorkUnitInput
	for i := range n {
		a, b := fmt.Sprintf("a%03d", i), fmt.Sprintf("b%03d", i)
		in = append(in, coordinate.WorkUnitInput{Key: name(a), Data: d}, coordinate.WorkUnitInput{Key: name(b), Data: d},
			coordinate.WorkUnitInput{Key: name(fmt.Sprintf("d%03d", i)), Data: d,
				DependsOn: []coordinate.UnitRef{{Spec: "s", Key: a}, {Spec: "s", Key: b}}})
	}
	if err := ns1.AddWorkUnits(ctx, "s", in); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		for j, ns := range []coordinate.Namespace{ns1, ns2} {
			key := fmt.Sprintf("%c%03d", "ab"[j], i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if err := ns.UpdateWorkUnit(ctx, "s", key, coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
					t.Error(err)
				}
			}()
		}
		if i%10 == 9 {
			close(start)
			wg.Wait()
			start = make(chan struct{})
			time.Sleep(time.Millisecond)
		}
	}
	close(start)
	wg.Wait()
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("d%03d", i))
	}
	us, err := ns1.GetWorkUnits(ctx, "s", keys)
	if err != nil {
		t.Fatal(err)
	}
	stuck := 0
	for _, u := range us {
		if u.Status != coordinate.StatusAvailable {
			if stuck < 5 {
				t.Logf("%s: status %v, depends on %v", u.Key.Bytes, u.Status, u.DependsOn)
			}
			stuck++
		}
	}
	if stuck > 0 {
		t.Errorf("%d of %d dependents not AVAILABLE after both their dependencies finished", stuck, n)
	}
}

// The same with one daemon and the fast path (leased units finished by
// UpdateAttempt), and a control run finishing them one after another.
func TestConcurrentFinishesOneDaemon(t *testing.T) {
	for _, concurrent := range []bool{false, true, true} {
		t.Run(fmt.Sprint("concurrent=", concurrent), func(t *testing.T) {
			const n = 100
			b, ns := openBackend(t, freshSchema(t), Options{MaxConns: 8})
			ctx := t.Context()
			raw, _ := cbor.Marshal(map[string]any{"name": "s"})
			if _, err := ns.SetWorkSpec(ctx, raw); err != nil {
				t.Fatal(err)
			}
			d, _ := cbor.Marshal(map[string]any{})
			name := func(s string) coordinate.Name { return coordinate.Name{Bytes: s, Text: true} }
			var in []coordinate.WorkUnitInput
			for i := range n {
				a, b := fmt.Sprintf("a%03d", i), fmt.Sprintf("b%03d", i)
				in = append(in, coordinate.WorkUnitInput{Key: name(a), Data: d}, coordinate.WorkUnitInput{Key: name(b), Data: d},
					coordinate.WorkUnitInput{Key: name(fmt.Sprintf("d%03d", i)), Data: d,
						DependsOn: []coordinate.UnitRef{{Spec: "s", Key: a}, {Spec: "s", Key: b}}})
			}
			if err := ns.AddWorkUnits(ctx, "s", in); err != nil {
				t.Fatal(err)
			}
			as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: name("w"), MaxJobs: 2 * n, LeaseTime: time.Hour})
			if err != nil || len(as) != 2*n {
				t.Fatalf("GetWork: %d, %v", len(as), err)
			}
			b.commits.fast.Store(0)
			byKey := map[string]coordinate.Attempt{}
			for _, a := range as {
				byKey[a.Key.Bytes] = a
			}
			fin := func(k string) {
				a := byKey[k]
				if err := ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "s", Key: k, ID: a.ID}, coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
					t.Error(err)
				}
			}
			var wg sync.WaitGroup
			for i := range n {
				a, bk := fmt.Sprintf("a%03d", i), fmt.Sprintf("b%03d", i)
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
			var keys []string
			for i := range n {
				keys = append(keys, fmt.Sprintf("d%03d", i))
			}
			us, err := ns.GetWorkUnits(ctx, "s", keys)
			if err != nil {
				t.Fatal(err)
			}
			stuck := 0
			for _, u := range us {
				if u.Status != coordinate.StatusAvailable {
					stuck++
				}
			}
			cnt, _ := ns.CountWorkUnits(ctx, "s")
			t.Logf("fast finishes: %d; counts %v", b.commits.fast.Load(), cnt)
			if stuck > 0 {
				t.Errorf("%d of %d dependents not AVAILABLE after both their dependencies finished", stuck, n)
			}
		})
	}
}

// d_i depends on a_i and b_i, both FAILED (so d_i is FAILED); a_i and b_i
// are retried at the same moment through two daemons. Afterwards no
// dependency of d_i is failed, so d_i must be BLOCKED again (each retry
// saw the other dependency still FAILED before deps_lock_dependents).
func TestConcurrentRetriesOfTwoFailedDependencies(t *testing.T) {
	const n = 100
	url := freshSchema(t)
	_, ns1 := openBackend(t, url, Options{MaxConns: 8})
	_, ns2 := openBackend(t, url, Options{MaxConns: 8})
	ctx := t.Context()
	raw, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns1.SetWorkSpec(ctx, raw); err != nil {
		t.Fatal(err)
	}
	d, _ := cbor.Marshal(map[string]any{})
	name := func(s string) coordinate.Name { return coordinate.Name{Bytes: s, Text: true} }
	var in []coordinate.WorkUnitInput
	for i := range n {
		a, b := fmt.Sprintf("a%03d", i), fmt.Sprintf("b%03d", i)
		in = append(in, coordinate.WorkUnitInput{Key: name(a), Data: d}, coordinate.WorkUnitInput{Key: name(b), Data: d},
			coordinate.WorkUnitInput{Key: name(fmt.Sprintf("d%03d", i)), Data: d,
				DependsOn: []coordinate.UnitRef{{Spec: "s", Key: a}, {Spec: "s", Key: b}}})
	}
	if err := ns1.AddWorkUnits(ctx, "s", in); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		for _, k := range []string{fmt.Sprintf("a%03d", i), fmt.Sprintf("b%03d", i)} {
			if err := ns1.UpdateWorkUnit(ctx, "s", k, coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	for i := range n {
		for j, ns := range []coordinate.Namespace{ns1, ns2} {
			key := fmt.Sprintf("%c%03d", "ab"[j], i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := ns.UpdateWorkUnit(ctx, "s", key, coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable}); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	cnt, err := ns1.CountWorkUnits(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("counts %v", cnt)
	if cnt[coordinate.StatusFailed] != 0 {
		t.Errorf("%d dependents still FAILED though none of their dependencies is", cnt[coordinate.StatusFailed])
	}
}

// d_i depends on a_i and b_i; a_i failed, so d_i is FAILED. Then a_i is
// retried while b_i fails, at the same moment through two daemons: b_i
// is FAILED afterwards, so d_i must be FAILED, never BLOCKED on a failed
// dependency (the failure skipped d_i while its snapshot said FAILED, and
// the retry, committing after, blocked it again).
func TestConcurrentRetryAndFailureOfTwoDependencies(t *testing.T) {
	const n = 100
	url := freshSchema(t)
	_, ns1 := openBackend(t, url, Options{MaxConns: 8})
	_, ns2 := openBackend(t, url, Options{MaxConns: 8})
	ctx := t.Context()
	raw, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns1.SetWorkSpec(ctx, raw); err != nil {
		t.Fatal(err)
	}
	d, _ := cbor.Marshal(map[string]any{})
	name := func(s string) coordinate.Name { return coordinate.Name{Bytes: s, Text: true} }
	var in []coordinate.WorkUnitInput
	for i := range n {
		a, b := fmt.Sprintf("a%03d", i), fmt.Sprintf("b%03d", i)
		in = append(in, coordinate.WorkUnitInput{Key: name(a), Data: d}, coordinate.WorkUnitInput{Key: name(b), Data: d},
			coordinate.WorkUnitInput{Key: name(fmt.Sprintf("d%03d", i)), Data: d,
				DependsOn: []coordinate.UnitRef{{Spec: "s", Key: a}, {Spec: "s", Key: b}}})
	}
	if err := ns1.AddWorkUnits(ctx, "s", in); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := ns1.UpdateWorkUnit(ctx, "s", fmt.Sprintf("a%03d", i), coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range n {
		for j, ns := range []coordinate.Namespace{ns1, ns2} {
			key, to := fmt.Sprintf("a%03d", i), coordinate.StatusAvailable
			if j == 1 {
				key, to = fmt.Sprintf("b%03d", i), coordinate.StatusFailed
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := ns.UpdateWorkUnit(ctx, "s", key, coordinate.WorkUnitUpdate{Status: to}); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("d%03d", i))
	}
	us, err := ns1.GetWorkUnits(ctx, "s", keys)
	if err != nil {
		t.Fatal(err)
	}
	wrong := 0
	for _, u := range us {
		if u.Status != coordinate.StatusFailed {
			if wrong < 5 {
				t.Logf("%s: status %v, depends on %v", u.Key.Bytes, u.Status, u.DependsOn)
			}
			wrong++
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d dependents not FAILED though one of their dependencies is", wrong, n)
	}
}
