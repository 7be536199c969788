package jobserver

import (
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// The hierarchical lock service (PROTOCOL §8.25), an extension the Go
// daemon offered: in memory, lost on restart. A lock key is a path (a list
// of labels); a path cannot be locked while it, one of its prefixes or one
// of its extensions is locked.

// Lock timeouts in seconds: 0 (or less) means the default, larger values
// are capped.
const (
	defaultLockTimeout = 60
	maxLockTimeout     = 1_000_000
)

// canonicalEnc encodes non-string labels canonically so equal values get
// equal keys.
var canonicalEnc = mustCanonicalEnc()

func mustCanonicalEnc() cbor.EncMode {
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic(err)
	}
	return em
}

// lockPath is one decoded path.
type lockPath struct {
	raw    cbor.RawMessage // as sent, for locksome's result
	repr   string          // Python repr, for messages
	first  string          // key of the first label ("" for an empty path)
	prefix []string        // prefix[k] is the key of the first k labels
}

func (p *lockPath) key() string { return p.prefix[len(p.prefix)-1] }

// heldLock is one locked path.
type heldLock struct {
	path     *lockPath
	owner    coordinate.Name
	deadline time.Time
	seq      uint64 // matches the expiry-heap entry that is current
}

// lockTable is the lock state of one JobServer.
type lockTable struct {
	clock coordinate.Clock

	mu      sync.Mutex
	locks   map[string]*heldLock           // full path key -> lock
	below   map[string]int                 // proper-prefix key -> locks under it
	byFirst map[string]map[string]struct{} // first label -> full path keys
	expiry  expiryHeap
	seq     uint64
}

func newLockTable(clock coordinate.Clock) *lockTable {
	return &lockTable{
		clock:   clock,
		locks:   map[string]*heldLock{},
		below:   map[string]int{},
		byFirst: map[string]map[string]struct{}{},
	}
}

// decodeLockPaths decodes a `keys` parameter: a list or tuple of paths,
// each a list or tuple of labels.
func decodeLockPaths(raw cbor.RawMessage) ([]*lockPath, error) {
	items, err := decodeList(raw, "keys")
	if err != nil {
		return nil, err
	}
	paths := make([]*lockPath, len(items))
	for i, it := range items {
		if paths[i], err = decodeLockPath(it, fmt.Sprintf("keys[%d]", i)); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

func decodeLockPath(raw cbor.RawMessage, what string) (*lockPath, error) {
	labels, err := decodeList(raw, what)
	if err != nil {
		return nil, err
	}
	var decoded any
	if err := decMode.Unmarshal(raw, &decoded); err != nil {
		return nil, typeError("%s: %v", what, err)
	}
	p := &lockPath{raw: raw, repr: pyReprValue(decoded), prefix: make([]string, 1, len(labels)+1)}
	var key []byte
	for i, l := range labels {
		lk, err := labelKey(l)
		if err != nil {
			return nil, typeError("%s[%d]: %v", what, i, err)
		}
		key = binary.AppendUvarint(key, uint64(len(lk)))
		key = append(key, lk...)
		p.prefix = append(p.prefix, string(key))
		if i == 0 {
			p.first = lk
		}
	}
	return p, nil
}

// labelKey identifies a label: strings by their bytes whatever their kind
// (as Python 2 compared 'a' and u'a'), other values by canonical CBOR.
func labelKey(raw cbor.RawMessage) (string, error) {
	if n, err := decodeName(raw, "label"); err == nil {
		return "s" + n.Bytes, nil
	}
	var v any
	if err := decMode.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	enc, err := canonicalEnc.Marshal(v)
	if err != nil {
		return "", err
	}
	return "v" + string(enc), nil
}

// lockTimeout converts a timeout parameter to a lock lifetime.
func lockTimeout(raw cbor.RawMessage) (time.Duration, error) {
	sec, err := decodeNumber(raw, "timeout")
	if err != nil {
		return 0, err
	}
	if !(sec > 0) {
		sec = defaultLockTimeout
	}
	return secondsDuration(min(sec, maxLockTimeout)), nil
}

// lock takes the table's mutex and sweeps expired locks, as every lock
// method does first; the caller unlocks t.mu.
func (t *lockTable) lock() (*lockTable, time.Time) {
	now := t.clock.Now()
	t.mu.Lock()
	t.sweep(now)
	return t, now
}

// sweep drops locks whose deadline has passed. Callers hold mu.
func (t *lockTable) sweep(now time.Time) {
	for len(t.expiry) > 0 && t.expiry[0].deadline.Before(now) {
		e := heap.Pop(&t.expiry).(expiryEntry)
		if l, ok := t.locks[e.key]; ok && l.seq == e.seq {
			t.remove(l)
		}
	}
}

// free reports whether p could be locked now. Callers hold mu.
func (t *lockTable) free(p *lockPath) bool {
	for _, k := range p.prefix {
		if _, ok := t.locks[k]; ok {
			return false
		}
	}
	return t.below[p.key()] == 0
}

// add locks p for owner. Callers hold mu and have checked free.
func (t *lockTable) add(p *lockPath, owner coordinate.Name, deadline time.Time) {
	t.seq++
	l := &heldLock{path: p, owner: owner, deadline: deadline, seq: t.seq}
	key := p.key()
	t.locks[key] = l
	for _, k := range p.prefix[:len(p.prefix)-1] {
		t.below[k]++
	}
	if len(p.prefix) > 1 {
		set := t.byFirst[p.first]
		if set == nil {
			set = map[string]struct{}{}
			t.byFirst[p.first] = set
		}
		set[key] = struct{}{}
	}
	heap.Push(&t.expiry, expiryEntry{deadline: deadline, key: key, seq: l.seq})
}

// remove unlocks l. Its expiry entry becomes stale and is skipped later.
// Callers hold mu.
func (t *lockTable) remove(l *heldLock) {
	key := l.path.key()
	delete(t.locks, key)
	for _, k := range l.path.prefix[:len(l.path.prefix)-1] {
		if t.below[k]--; t.below[k] <= 0 {
			delete(t.below, k)
		}
	}
	if set := t.byFirst[l.path.first]; set != nil {
		delete(set, key)
		if len(set) == 0 {
			delete(t.byFirst, l.path.first)
		}
	}
}

// heldBy checks that every path is locked by owner, returning the message
// for the first that is not.
func (t *lockTable) heldBy(paths []*lockPath, owner coordinate.Name, notHeld func(*lockPath) string) (string, bool) {
	for _, p := range paths {
		l, ok := t.locks[p.key()]
		if !ok {
			return notHeld(p), false
		}
		if l.owner.Bytes != owner.Bytes {
			return p.repr + " is held by " + l.owner.Bytes, false
		}
	}
	return "", true
}

// lockArgs decodes (locker_id, timeout, keys).
func lockArgs(p []cbor.RawMessage) (coordinate.Name, time.Duration, []*lockPath, error) {
	owner, err := decodeName(p[0], "locker_id")
	if err != nil {
		return owner, 0, nil, err
	}
	timeout, err := lockTimeout(p[1])
	if err != nil {
		return owner, 0, nil, err
	}
	paths, err := decodeLockPaths(p[2])
	return owner, timeout, paths, err
}

// lock: lock(locker_id, timeout, keys) -> (true, null), or (false, "PATH
// is not lockable") with nothing locked.
func (js *JobServer) lock(_ context.Context, p []cbor.RawMessage) (any, error) {
	owner, timeout, paths, err := lockArgs(p)
	if err != nil {
		return nil, err
	}
	t, now := js.locks.lock()
	defer t.mu.Unlock()
	for i, path := range paths {
		if !t.free(path) {
			for _, done := range paths[:i] {
				t.remove(t.locks[done.key()])
			}
			return pair(false, message(path.repr+" is not lockable")), nil
		}
		t.add(path, owner, now.Add(timeout))
	}
	return okPair(), nil
}

// locksome: locksome(locker_id, timeout, keys) -> ([path or null...],
// null): locks whichever paths are free.
func (js *JobServer) locksome(_ context.Context, p []cbor.RawMessage) (any, error) {
	owner, timeout, paths, err := lockArgs(p)
	if err != nil {
		return nil, err
	}
	t, now := js.locks.lock()
	defer t.mu.Unlock()
	out := make([]any, len(paths))
	for i, path := range paths {
		if t.free(path) {
			t.add(path, owner, now.Add(timeout))
			out[i] = path.raw
		}
	}
	return pair(out, nil), nil
}

// renew: renew(locker_id, timeout, keys) -> (true, null) with every
// deadline reset, or (false, "PATH is held by OWNER") when any path is not
// held by locker_id.
func (js *JobServer) renew(_ context.Context, p []cbor.RawMessage) (any, error) {
	owner, timeout, paths, err := lockArgs(p)
	if err != nil {
		return nil, err
	}
	t, now := js.locks.lock()
	defer t.mu.Unlock()
	if msg, ok := t.heldBy(paths, owner, func(p *lockPath) string { return p.repr + " is held by None" }); !ok {
		return pair(false, message(msg)), nil
	}
	for _, path := range paths {
		l := t.locks[path.key()]
		t.seq++
		l.seq, l.deadline = t.seq, now.Add(timeout)
		heap.Push(&t.expiry, expiryEntry{deadline: l.deadline, key: path.key(), seq: l.seq})
	}
	return okPair(), nil
}

// readlock: readlock(keys) -> [owner or null...] (not a pair).
func (js *JobServer) readlock(_ context.Context, p []cbor.RawMessage) (any, error) {
	paths, err := decodeLockPaths(p[0])
	if err != nil {
		return nil, err
	}
	t, _ := js.locks.lock()
	defer t.mu.Unlock()
	out := make([]any, len(paths))
	for i, path := range paths {
		if l, ok := t.locks[path.key()]; ok {
			out[i] = nameValue(l.owner)
		}
	}
	return out, nil
}

// unlock: unlock(locker_id, keys) -> (true, null) with all released, or
// (false, "PATH is not held" / "PATH is held by OWNER").
func (js *JobServer) unlock(_ context.Context, p []cbor.RawMessage) (any, error) {
	owner, err := decodeName(p[0], "locker_id")
	if err != nil {
		return nil, err
	}
	paths, err := decodeLockPaths(p[1])
	if err != nil {
		return nil, err
	}
	t, _ := js.locks.lock()
	defer t.mu.Unlock()
	if msg, ok := t.heldBy(paths, owner, func(p *lockPath) string { return p.repr + " is not held" }); !ok {
		return pair(false, message(msg)), nil
	}
	for _, path := range paths {
		if l, ok := t.locks[path.key()]; ok { // a path may be listed twice
			t.remove(l)
		}
	}
	return okPair(), nil
}

// deleteNamespace: delete_namespace(prefix) -> 0; drops every lock whose
// first label is prefix.
func (js *JobServer) deleteNamespace(_ context.Context, p []cbor.RawMessage) (any, error) {
	first, err := labelKey(p[0])
	if err != nil {
		return nil, typeError("prefix: %v", err)
	}
	t := js.locks
	t.mu.Lock()
	defer t.mu.Unlock()
	for key := range t.byFirst[first] {
		if l, ok := t.locks[key]; ok {
			t.remove(l)
		}
	}
	return 0, nil
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
