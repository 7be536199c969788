package cachekeep

import (
	"fmt"
	"testing"
	"time"
)

// TestReadAheadFollowsClaimOrder: the read-ahead reads the units after a
// position in the order claims take them, across priorities, and only
// available ones.
func TestReadAheadFollowsClaimOrder(t *testing.T) {
	e := newEnv(t, Config{})
	const spec = 1
	var in []unit
	for p, n := range map[float64]int{2: 3, 1: 3, 0: 4} {
		for i := range n {
			in = append(in, unit{key: fmt.Sprintf("p%v-%d", p, i), priority: p})
		}
	}
	e.add(spec, in...)
	e.claim(spec, 1) // p2-0 is leased, no longer available

	var got []string
	from := queueHead
	for range 10 {
		res, err := e.k.readAheadOnce(t.Context(), spec, from, 2)
		if err != nil {
			t.Fatal(err)
		}
		if res.units == 0 {
			break
		}
		if res.pagesRead < 0 || res.units > 2 {
			t.Fatalf("read-ahead from %v: %+v", from, res)
		}
		got = append(got, fmt.Sprintf("%v:%s", res.end.Priority, res.end.Key))
		from = res.end
	}
	want := []string{"2:p2-2", "1:p1-1", "0:p0-0", "0:p0-2", "0:p0-3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read-ahead ends %v, want %v", got, want)
	}
}

// TestReadAheadStartsOnBigClaims: a claim of readAheadMin units or more
// reads ahead; one that finds the units cached makes the spec go without
// for readAheadQuiet; smaller claims never read ahead.
func TestReadAheadStartsOnBigClaims(t *testing.T) {
	e := newEnv(t, Config{})
	const big, small = 1, 2
	e.add(big, numbered(5*readAheadMin)...)
	e.add(small, numbered(2*readAheadMin)...)
	ra := &e.k.readAhead
	runs := func() int64 {
		ra.settle()
		return ra.runs.Load()
	}

	for range 2 {
		e.claim(small, readAheadMin-1)
	}
	if n := runs(); n != 0 {
		t.Fatalf("%d read-aheads after claims of %d units, want 0", n, readAheadMin-1)
	}

	e.claim(big, readAheadMin)
	if n := runs(); n != 1 {
		t.Fatalf("%d read-aheads after the first big claim, want 1", n)
	}
	// The units were just written: their pages are in shared_buffers.
	ra.mu.Lock()
	st := ra.specs[big]
	quiet := st != nil && st.quietUntil.After(e.clock.Now())
	ra.mu.Unlock()
	if !quiet {
		t.Fatalf("after reading cached units the spec's read-ahead is %+v, want it quiet", st)
	}
	e.claim(big, readAheadMin)
	if n := runs(); n != 1 {
		t.Fatalf("%d read-aheads while quiet, want still 1", n)
	}
	e.clock.Add(readAheadQuiet + time.Second)
	e.claim(big, readAheadMin)
	if n := runs(); n != 2 {
		t.Fatalf("%d read-aheads after the quiet time, want 2", n)
	}
}

func TestSharedBlocksRead(t *testing.T) {
	n, err := sharedBlocksRead([]byte(`[{"Plan": {"Node Type": "Aggregate", "Shared Hit Blocks": 40,
		"Shared Read Blocks": 7, "Plans": [{"Shared Read Blocks": 5}]}, "Execution Time": 1.5}]`))
	if err != nil || n != 7 {
		t.Fatalf("sharedBlocksRead = %d, %v; want 7 (the top node's)", n, err)
	}
	for _, bad := range []string{`[{"Plan": {"Node Type": "Aggregate"}}]`, `[]`, `{`} {
		if _, err := sharedBlocksRead([]byte(bad)); err == nil {
			t.Errorf("sharedBlocksRead(%s) gave no error", bad)
		}
	}
}

// TestWarmHeadAfterBulkAdds: once warmMinAdded units were added to a spec
// and adds went quiet, the backend reads the front of its queue; fewer
// added units never arm a warm. A warm reads as many units as shared_buffers
// has pages, at most warmMaxUnits.
func TestWarmHeadAfterBulkAdds(t *testing.T) {
	for _, buffers := range []int{1000, 2 * warmMaxUnits} {
		if units := New(Config{SharedBuffers: buffers}).readAhead.warm.units; units != min(buffers, warmMaxUnits) {
			t.Errorf("with %d buffers a warm reads %d units, want %d", buffers, units, min(buffers, warmMaxUnits))
		}
	}
	e := newEnv(t, Config{SharedBuffers: 1000})
	ra := &e.k.readAhead
	ra.mu.Lock()
	ra.warm.idle, ra.warm.units = 20*time.Millisecond, 100
	ra.mu.Unlock()
	const spec, other = 1, 2
	armed := func(spec int64) bool {
		ra.mu.Lock()
		defer ra.mu.Unlock()
		sw := ra.warm.specs[spec]
		return sw != nil && sw.timer != nil
	}

	e.add(spec, numbered(warmMinAdded-1)...)
	if armed(spec) || ra.runs.Load() != 0 {
		t.Fatalf("a warm was armed or ran after %d added units", warmMinAdded-1)
	}
	e.add(spec, unit{key: "x"})
	waitFor(t, "the warm", func() bool {
		ra.mu.Lock()
		defer ra.mu.Unlock()
		st := ra.specs[spec]
		return ra.runs.Load() == 1 && st != nil && !st.running
	})
	ra.mu.Lock()
	st := *ra.specs[spec]
	left := len(ra.warm.specs)
	ra.mu.Unlock()
	if string(st.frontier.Key) != "u00099" || st.ahead != 100 || left != 0 {
		t.Fatalf("after the warm the read-ahead is at %s with %d units ahead (%d specs waiting); want u00099, 100, 0",
			st.frontier.Key, st.ahead, left)
	}

	// Closing stops a pending warm.
	ra.mu.Lock()
	ra.warm.idle = time.Hour
	ra.mu.Unlock()
	e.add(other, numbered(warmMinAdded)...)
	if !armed(other) {
		t.Fatal("no warm armed after a bulk add")
	}
	ra.close()
	if armed(other) || ra.runs.Load() != 1 {
		t.Fatalf("after close a warm is still armed, or %d read-aheads ran (want 1)", ra.runs.Load())
	}
}

// TestReadAheadCountsSmallClaims: once a spec is read ahead (here after a
// warm), claims smaller than readAheadMin count too, and the Keeper keeps
// at least readAheadWindow units read ahead of them.
func TestReadAheadCountsSmallClaims(t *testing.T) {
	e := newEnv(t, Config{SharedBuffers: 1000})
	ra := &e.k.readAhead
	ra.mu.Lock()
	ra.warm.idle, ra.warm.units = time.Millisecond, 100
	ra.mu.Unlock()
	const spec = 1
	e.add(spec, numbered(warmMinAdded)...)
	state := func() (readAheadSpec, int64) {
		ra.mu.Lock()
		defer ra.mu.Unlock()
		if st := ra.specs[spec]; st != nil {
			return *st, ra.runs.Load()
		}
		return readAheadSpec{}, ra.runs.Load()
	}
	waitFor(t, "the warm", func() bool {
		st, runs := state()
		return runs == 1 && st.ahead == 100 && !st.running
	})
	e.clock.Add(readAheadQuiet + time.Second) // the warm found its units cached

	e.claim(spec, 50)
	ra.settle()
	st, runs := state()
	// 50 of the warm's 100 units were left: the read-ahead took the next
	// readAheadWindow-50, up to u04145.
	if runs != 2 || string(st.frontier.Key) != "u04145" || st.ahead != readAheadWindow {
		t.Fatalf("after a 50-unit claim: %d read-aheads, at %s with %d units ahead; want 2, u04145, %d",
			runs, st.frontier.Key, st.ahead, readAheadWindow)
	}
	e.claim(spec, 10)
	ra.settle()
	if st, runs := state(); runs != 2 || st.ahead != readAheadWindow-10 {
		t.Fatalf("after a 10-unit claim: %d read-aheads, %d units ahead; want 2, %d", runs, st.ahead, readAheadWindow-10)
	}
}
