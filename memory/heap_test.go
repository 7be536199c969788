package memory

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The comparators the entry order must reproduce, written directly on the
// units' fields (availableFirst is in heap.go, listings use it).

func notBeforeFirst(a, b *unit) bool {
	if a.notBefore != b.notBefore {
		return a.notBefore < b.notBefore
	}
	return a.key < b.key
}

func expiresFirst(a, b *unit) bool {
	if a.expiration != b.expiration {
		return a.expiration < b.expiration
	}
	return a.key < b.key
}

// heapOrders pairs each heap's entry order with its reference comparator.
var heapOrders = []struct {
	name  string
	order func(*unit) uint64
	less  func(a, b *unit) bool
}{
	{"available", availableOrder, availableFirst},
	{"delayed", notBeforeOrder, notBeforeFirst},
	{"pending", expiresOrder, expiresFirst},
}

// Awkward priorities: signed zeros, extremes, subnormals, infinities.
var edgePriorities = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 1e300, -1e300,
	math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
	math.Inf(1), math.Inf(-1), 3, -3,
}

// Awkward times: zero (unset), extremes, neighbours of zero.
var edgeTimes = []int64{0, 1, -1, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1, 1 << 62, -(1 << 62)}

// randomKey returns keys that stress the 16-byte prefix: shared prefixes of
// exactly 16 bytes and more, keys that are prefixes of each other, NUL
// bytes (which the zero padding must not confuse with "no byte") and
// bytes above 0x7f.
func randomKey(r *rand.Rand) string {
	prefixes := []string{"", "a", "abcdefghijklmnop", "abcdefghijklmno", "abcdefghijklmnopq", "\x00", "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", "abcdefgh\x00"}
	alphabet := "\x00\x01a\x7f\x80\xff"
	var b strings.Builder
	b.WriteString(prefixes[r.IntN(len(prefixes))])
	for range r.IntN(4) {
		b.WriteByte(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

func randomUnit(r *rand.Rand) *unit {
	u := &unit{key: randomKey(r), heapIdx: -1}
	if r.IntN(2) == 0 {
		u.priority = edgePriorities[r.IntN(len(edgePriorities))]
	} else {
		u.priority = r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
	}
	u.notBefore = edgeTimes[r.IntN(len(edgeTimes))]
	if r.IntN(2) == 0 {
		u.notBefore = r.Int64() - r.Int64()
	}
	u.expiration = edgeTimes[r.IntN(len(edgeTimes))]
	if r.IntN(2) == 0 {
		u.expiration = r.Int64N(1000) - 500
	}
	return u
}

// TestHeapEntryOrderMatchesComparators checks that comparing entries gives
// exactly the comparator order on random pairs of units, in both directions.
func TestHeapEntryOrderMatchesComparators(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	units := make([]*unit, 400)
	for i := range units {
		units[i] = randomUnit(r)
	}
	for _, o := range heapOrders {
		h := unitHeap{order: o.order}
		entries := make([]heapEntry, len(units))
		for i, u := range units {
			entries[i] = h.entry(u)
		}
		for i, a := range units {
			for j, b := range units {
				if got, want := entries[i].before(&entries[j]), o.less(a, b); got != want {
					t.Fatalf("%s: (p=%v nb=%d exp=%d key=%q) before (p=%v nb=%d exp=%d key=%q) = %v, comparator says %v",
						o.name, a.priority, a.notBefore, a.expiration, a.key, b.priority, b.notBefore, b.expiration, b.key, got, want)
				}
			}
		}
	}
}

// TestFloatOrder checks the priority mapping on neighbouring floats and
// that NaN maps without failing.
func TestFloatOrder(t *testing.T) {
	sorted := []float64{math.Inf(-1), -math.MaxFloat64, -1, -math.SmallestNonzeroFloat64, 0, math.SmallestNonzeroFloat64, 1, math.Nextafter(1, 2), math.MaxFloat64, math.Inf(1)}
	for i := 1; i < len(sorted); i++ {
		if floatOrder(sorted[i-1]) >= floatOrder(sorted[i]) {
			t.Errorf("floatOrder(%v) >= floatOrder(%v)", sorted[i-1], sorted[i])
		}
	}
	if floatOrder(math.Copysign(0, -1)) != floatOrder(0) {
		t.Errorf("-0 and +0 map apart, but compare equal")
	}
	_ = floatOrder(math.NaN())
}

// TestUnitHeapOrder pushes, removes, re-keys and pops random units in each
// heap and checks the back-indexes and entries stay right and the heap
// hands units out in its comparator's order.
func TestUnitHeapOrder(t *testing.T) {
	for _, o := range heapOrders {
		t.Run(o.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			h := unitHeap{order: o.order}
			in := map[*unit]bool{}
			for i := range 3000 {
				switch x := r.IntN(10); {
				case x < 5:
					u := randomUnit(r)
					h.push(u)
					in[u] = true
				case x < 7 && len(in) > 0:
					u := anyUnit(in, r)
					h.remove(u)
					delete(in, u)
					if u.heapIdx != -1 {
						t.Fatalf("step %d: removed unit keeps index %d", i, u.heapIdx)
					}
				case len(in) > 0:
					u := anyUnit(in, r)
					v := randomUnit(r)
					u.priority, u.notBefore, u.expiration = v.priority, v.notBefore, v.expiration
					h.fix(u)
				}
				checkHeap(t, &h, o.less)
			}
			want := make([]*unit, 0, len(in))
			for u := range in {
				want = append(want, u)
			}
			slices.SortStableFunc(want, func(a, b *unit) int {
				switch {
				case o.less(a, b):
					return -1
				case o.less(b, a):
					return 1
				}
				return 0
			})
			for i := range want {
				got := h.pop()
				if o.less(got, want[i]) || o.less(want[i], got) {
					t.Fatalf("pop %d = %q, want %q", i, got.key, want[i].key)
				}
			}
			if h.Len() != 0 || h.top() != nil {
				t.Fatalf("heap not empty after popping everything")
			}
		})
	}
}

// TestUnitHeapRestore rebuilds a heap from its units in any order, as a
// snapshot restore does (load, heapify): it hands them out in the order
// the original heap does, since the order is total.
func TestUnitHeapRestore(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	h := unitHeap{order: availableOrder}
	for range 500 {
		h.push(randomUnit(r))
	}
	// Equal priorities, so that key order decides.
	for range 50 {
		u := randomUnit(r)
		u.priority = 1
		h.push(u)
	}
	units := make([]*unit, h.Len()) // copies: a unit records one heap position
	for i := range h.items {
		c := *h.items[i].u
		units[i] = &c
	}
	r.Shuffle(len(units), func(i, j int) { units[i], units[j] = units[j], units[i] })
	restored := unitHeap{order: availableOrder}
	for _, u := range units {
		restored.load(u)
	}
	restored.heapify()
	checkHeap(t, &restored, availableFirst)
	for i := 0; h.Len() > 0; i++ {
		want := h.pop()
		if got := restored.pop(); got.key != want.key {
			t.Fatalf("pop %d: restored heap gives %q, the original %q", i, got.key, want.key)
		}
	}
	if restored.Len() != 0 {
		t.Fatalf("restored heap has %d units more", restored.Len())
	}
}

// checkHeap fails unless every entry matches its unit, every unit records
// its position and no entry sorts before its parent under less.
func checkHeap(t *testing.T, h *unitHeap, less func(a, b *unit) bool) {
	t.Helper()
	for j := range h.items {
		e := &h.items[j]
		if int(e.u.heapIdx) != j {
			t.Fatalf("item %d records index %d", j, e.u.heapIdx)
		}
		if *e != h.entry(e.u) {
			t.Fatalf("item %d entry is stale", j)
		}
		if j > 0 && less(e.u, h.items[(j-1)/2].u) {
			t.Fatalf("item %d sorts before its parent", j)
		}
	}
}

func anyUnit(set map[*unit]bool, r *rand.Rand) *unit {
	n := r.IntN(len(set))
	for u := range set {
		if n == 0 {
			return u
		}
		n--
	}
	return nil
}
