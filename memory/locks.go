package memory

import (
	"container/heap"
	"context"
	"strings"
	"sync"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// The lock service (coordinate.Locker) of a memory namespace: in memory
// only, never journaled, so locks are lost when the daemon stops (the
// Python daemon kept them no better). Only one daemon can use a memory
// backend, so this is every daemon's view.

// heldLock is one locked path.
type heldLock struct {
	prefixes []string // keys of the path's prefixes; the last is the path's
	owner    coordinate.Name
	deadline time.Time
	seq      uint64 // matches the expiry-heap entry that is current
}

func (l *heldLock) key() string { return l.prefixes[len(l.prefixes)-1] }

// lockTable is the lock state of one namespace.
type lockTable struct {
	clock coordinate.Clock

	mu     sync.Mutex
	locks  map[string]*heldLock // path key -> lock
	below  map[string]int       // proper-prefix key -> locks under it
	expiry expiryHeap
	seq    uint64
}

func newLockTable(clock coordinate.Clock) *lockTable {
	return &lockTable{clock: clock, locks: map[string]*heldLock{}, below: map[string]int{}}
}

// lock takes mu and drops expired locks, as every method does first; the
// caller unlocks mu.
func (t *lockTable) lock() time.Time {
	now := t.clock.Now()
	t.mu.Lock()
	for len(t.expiry) > 0 && t.expiry[0].deadline.Before(now) {
		e := heap.Pop(&t.expiry).(expiryEntry)
		if l, ok := t.locks[e.key]; ok && l.seq == e.seq {
			t.remove(l)
		}
	}
	return now
}

// free reports whether the path with these prefixes could be locked now.
func (t *lockTable) free(prefixes []string) bool {
	for _, k := range prefixes {
		if _, ok := t.locks[k]; ok {
			return false
		}
	}
	return t.below[prefixes[len(prefixes)-1]] == 0
}

func (t *lockTable) add(prefixes []string, owner coordinate.Name, deadline time.Time) {
	t.seq++
	l := &heldLock{prefixes: prefixes, owner: owner, deadline: deadline, seq: t.seq}
	t.locks[l.key()] = l
	for _, k := range prefixes[:len(prefixes)-1] {
		t.below[k]++
	}
	t.schedule(expiryEntry{deadline: deadline, key: l.key(), seq: l.seq})
}

// schedule adds e to the expiry heap. An unlock or a renewal leaves the
// lock's earlier entry behind, stale until its own deadline (up to days
// away), so a lock renewed every second would grow the heap without
// bound; once stale entries outnumber the locks, the heap is rebuilt from
// the locks held (amortized O(1) per call).
func (t *lockTable) schedule(e expiryEntry) {
	heap.Push(&t.expiry, e)
	if len(t.expiry) <= 2*len(t.locks)+64 {
		return
	}
	t.expiry = t.expiry[:0]
	for k, l := range t.locks {
		t.expiry = append(t.expiry, expiryEntry{deadline: l.deadline, key: k, seq: l.seq})
	}
	heap.Init(&t.expiry)
}

// remove unlocks l. Its expiry entry becomes stale and is skipped later
// (or dropped by schedule's rebuild).
func (t *lockTable) remove(l *heldLock) {
	delete(t.locks, l.key())
	for _, k := range l.prefixes[:len(l.prefixes)-1] {
		if t.below[k]--; t.below[k] <= 0 {
			delete(t.below, k)
		}
	}
}

// heldBy returns the index of the first path owner does not hold and its
// holder, or -1.
func (t *lockTable) heldBy(paths []coordinate.LockPath, owner coordinate.Name) (int, *coordinate.Name) {
	for i, p := range paths {
		l, ok := t.locks[p.Key]
		if !ok {
			return i, nil
		}
		if l.owner.Bytes != owner.Bytes {
			h := l.owner
			return i, &h
		}
	}
	return -1, nil
}

func (ns *namespace) LockPaths(_ context.Context, owner coordinate.Name, ttl time.Duration, paths []coordinate.LockPath, all bool) ([]bool, int, error) {
	t := ns.locks
	now := t.lock()
	defer t.mu.Unlock()
	locked := make([]bool, len(paths))
	for i, p := range paths {
		prefixes := p.Prefixes()
		if t.free(prefixes) {
			t.add(prefixes, owner, now.Add(ttl))
			locked[i] = true
			continue
		}
		if all {
			for j := range paths[:i] {
				t.remove(t.locks[paths[j].Key])
				locked[j] = false
			}
			return locked, i, nil
		}
	}
	return locked, -1, nil
}

func (ns *namespace) RenewLocks(_ context.Context, owner coordinate.Name, ttl time.Duration, paths []coordinate.LockPath) (int, *coordinate.Name, error) {
	t := ns.locks
	now := t.lock()
	defer t.mu.Unlock()
	if i, holder := t.heldBy(paths, owner); i >= 0 {
		return i, holder, nil
	}
	for _, p := range paths {
		l := t.locks[p.Key]
		t.seq++
		l.seq, l.deadline = t.seq, now.Add(ttl)
		t.schedule(expiryEntry{deadline: l.deadline, key: p.Key, seq: l.seq})
	}
	return -1, nil, nil
}

func (ns *namespace) UnlockPaths(_ context.Context, owner coordinate.Name, paths []coordinate.LockPath) (int, *coordinate.Name, error) {
	t := ns.locks
	t.lock()
	defer t.mu.Unlock()
	if i, holder := t.heldBy(paths, owner); i >= 0 {
		return i, holder, nil
	}
	for _, p := range paths {
		if l, ok := t.locks[p.Key]; ok { // a path may be listed twice
			t.remove(l)
		}
	}
	return -1, nil, nil
}

func (ns *namespace) ReadLocks(_ context.Context, paths []coordinate.LockPath) ([]*coordinate.Name, error) {
	t := ns.locks
	t.lock()
	defer t.mu.Unlock()
	out := make([]*coordinate.Name, len(paths))
	for i, p := range paths {
		if l, ok := t.locks[p.Key]; ok {
			h := l.owner
			out[i] = &h
		}
	}
	return out, nil
}

// DropLocks looks at every lock: delete_namespace is rare and locks are
// few next to work units.
func (ns *namespace) DropLocks(_ context.Context, path coordinate.LockPath) error {
	t := ns.locks
	t.lock()
	defer t.mu.Unlock()
	for key, l := range t.locks {
		if strings.HasPrefix(key, path.Key) {
			t.remove(l)
		}
	}
	return nil
}

// expiryEntry schedules the expiry check of one lock.
type expiryEntry struct {
	deadline time.Time
	key      string
	seq      uint64
}

// expiryHeap orders entries by deadline (container/heap).
type expiryHeap []expiryEntry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiryEntry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
