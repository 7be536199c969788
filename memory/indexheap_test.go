package memory

import (
	"math/rand"
	"testing"
)

type heapTestElem struct{ key, idx int }

func (e *heapTestElem) before(o *heapTestElem) bool { return e.key < o.key }
func (e *heapTestElem) setHeapIndex(i int)          { e.idx = i }

// Random pushes, removals and key changes keep the heap ordered, each
// element's recorded index right and removed elements at -1.
func TestIndexedHeap(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var h indexedHeap[*heapTestElem]
	in := map[*heapTestElem]bool{}
	for step := range 20000 {
		var any *heapTestElem
		for e := range in {
			any = e
			break
		}
		switch op := rng.Intn(10); {
		case op < 4 || any == nil:
			e := &heapTestElem{key: rng.Intn(100)}
			h.push(e)
			in[e] = true
		case op < 7:
			h.remove(any.idx)
			delete(in, any)
			if any.idx != -1 {
				t.Fatalf("step %d: removed element records index %d", step, any.idx)
			}
		default:
			any.key = rng.Intn(100)
			h.fix(any.idx)
		}
		if len(h) != len(in) {
			t.Fatalf("step %d: %d elements, want %d", step, len(h), len(in))
		}
		for i, e := range h {
			if e.idx != i || !in[e] {
				t.Fatalf("step %d: element at %d records %d (in the set: %v)", step, i, e.idx, in[e])
			}
			if i > 0 && e.before(h[(i-1)/2]) {
				t.Fatalf("step %d: element at %d (key %d) sorts before its parent (key %d)", step, i, e.key, h[(i-1)/2].key)
			}
		}
	}
}
