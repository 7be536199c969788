package memory

import (
	"maps"

	"github.com/coordinated/coordinated/coordinate"
)

// worker is one live worker record (SEMANTICS §11).
type worker struct {
	id        coordinate.Name
	mode      []byte
	data      []byte
	parent    *coordinate.Name
	lastHeard int64
	expires   int64
	heapIdx   int
	// outstanding holds the units handed to this worker that are not yet
	// FINISHED or FAILED (nor deleted), each with the expiry of the last
	// lease of this worker on it that lapsed (0: none; see lapse).
	outstanding map[*unit]int64
	// shared says a snapshot's capture holds outstanding too: it is
	// copied before it next changes (own).
	shared bool
}

// own returns outstanding for changing it, copied first when a capture
// shares it (captureWorkersAndGroups): at most one copy per worker per
// snapshot, on the first change after it, instead of a copy of every
// worker's units in the snapshot's pause.
func (w *worker) own() map[*unit]int64 {
	if w.shared {
		w.outstanding = maps.Clone(w.outstanding)
		w.shared = false
	}
	return w.outstanding
}

// workerRegistry holds the live workers, their expiry order, the
// parent/child relation and which workers hold each outstanding unit.
type workerRegistry struct {
	byID     map[string]*worker
	byExpiry indexedHeap[*worker]
	// children maps a parent id to its children's ids. A child stays
	// listed under its parent id while the parent itself is gone.
	children map[string]map[string]struct{}
	// holders maps a unit to the workers that have it outstanding.
	holders map[*unit]map[*worker]struct{}
}

func newWorkerRegistry() workerRegistry {
	return workerRegistry{
		byID:     make(map[string]*worker),
		children: make(map[string]map[string]struct{}),
		holders:  make(map[*unit]map[*worker]struct{}),
	}
}

// heartbeat creates or replaces a worker record, keeping its outstanding
// units.
func (r *workerRegistry) heartbeat(hb coordinate.Heartbeat, now int64) {
	w, ok := r.byID[hb.Worker.Bytes]
	if !ok {
		w = &worker{outstanding: make(map[*unit]int64)}
		r.byID[hb.Worker.Bytes] = w
	} else if w.parent != nil {
		r.unlinkChild(w.parent.Bytes, hb.Worker.Bytes)
	}
	w.id = hb.Worker
	w.mode = cloneData(hb.Mode)
	w.data = cloneData(hb.Data)
	w.parent = nil
	if hb.Parent != nil {
		p := *hb.Parent
		w.parent = &p
		kids := r.children[p.Bytes]
		if kids == nil {
			kids = make(map[string]struct{})
			r.children[p.Bytes] = kids
		}
		kids[hb.Worker.Bytes] = struct{}{}
	}
	w.lastHeard = now
	w.expires = now + int64(hb.Expire)
	if ok {
		r.byExpiry.fix(w.heapIdx)
	} else {
		r.byExpiry.push(w)
	}
}

// remove deletes a worker record; its leases are untouched.
func (r *workerRegistry) remove(w *worker) {
	r.byExpiry.remove(w.heapIdx)
	delete(r.byID, w.id.Bytes)
	if w.parent != nil {
		r.unlinkChild(w.parent.Bytes, w.id.Bytes)
	}
	for u := range w.outstanding {
		hs := r.holders[u]
		delete(hs, w)
		if len(hs) == 0 {
			delete(r.holders, u)
		}
	}
}

func (r *workerRegistry) unlinkChild(parent, child string) {
	kids := r.children[parent]
	delete(kids, child)
	if len(kids) == 0 {
		delete(r.children, parent)
	}
}

// expire removes the records whose expiry is before now.
func (r *workerRegistry) expire(now int64) {
	for len(r.byExpiry) > 0 && r.byExpiry[0].expires < now {
		r.remove(r.byExpiry[0])
	}
}

// expiredBefore returns the records whose expiry is before now, in no
// particular order, visiting only them and their heap children: the
// expiry pass runs on the request path, so it must not walk every worker.
func (r *workerRegistry) expiredBefore(now int64) []*worker {
	var out []*worker
	h := r.byExpiry
	for stack := []int{0}; len(stack) > 0; {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(h) || h[i].expires >= now {
			continue
		}
		out = append(out, h[i])
		stack = append(stack, 2*i+1, 2*i+2)
	}
	return out
}

func (r *workerRegistry) needsExpire(now int64) bool {
	return len(r.byExpiry) > 0 && r.byExpiry[0].expires < now
}

// nextExpiry is the first time needsExpire holds, if a worker can expire.
func (r *workerRegistry) nextExpiry() (int64, bool) {
	if len(r.byExpiry) == 0 {
		return 0, false
	}
	return r.byExpiry[0].expires + 1, true
}

// handOut records that a live worker was given u.
func (r *workerRegistry) handOut(id string, u *unit) {
	w, ok := r.byID[id]
	if !ok {
		return
	}
	w.own()[u] = 0 // a new lease: none of its has lapsed
	hs := r.holders[u]
	if hs == nil {
		hs = make(map[*worker]struct{}, 1)
		r.holders[u] = hs
	}
	hs[w] = struct{}{}
}

// lapse records that the lease on u, still PENDING, is lapsing: its
// expiry goes into the outstanding entry of the worker holding it, where
// get_child_work_units reports it while nobody holds u, as the Python
// daemon reported the past lease time until its lazy sweep ran
// (docs/compat.md).
func (r *workerRegistry) lapse(u *unit) { r.lapseAt(u, u.expiration) }

// lapseAt is lapse with the lease's end at t: a lease time not in the
// future given back the unit (coordinate.UpdateEffect.LeaseEnded), which
// Python showed as the holder's, with that past time, until its sweep.
// A unit given back with status AVAILABLE keeps no time: its entry then
// reports no worker.
func (r *workerRegistry) lapseAt(u *unit, t int64) {
	if u.workerKind == noWorker || t == 0 {
		return
	}
	if w := r.byID[u.worker]; w != nil {
		if _, ok := w.outstanding[u]; ok {
			w.own()[u] = t
		}
	}
}

// dropUnit removes u from every worker's outstanding set.
func (r *workerRegistry) dropUnit(u *unit) {
	hs, ok := r.holders[u]
	if !ok {
		return
	}
	for w := range hs {
		delete(w.own(), u)
	}
	delete(r.holders, u)
}

// clearUnits empties every outstanding set (all units are going away).
func (r *workerRegistry) clearUnits() {
	for _, w := range r.byID {
		if w.shared {
			w.outstanding, w.shared = make(map[*unit]int64), false
		} else {
			clear(w.outstanding)
		}
	}
	clear(r.holders)
}

// The order of workerRegistry.byExpiry (an indexedHeap): by expiry, then
// id; the worker's place kept in worker.heapIdx.
func (w *worker) before(other *worker) bool {
	if w.expires != other.expires {
		return w.expires < other.expires
	}
	return w.id.Bytes < other.id.Bytes
}
func (w *worker) setHeapIndex(i int) { w.heapIdx = i }

func (w *worker) info() *coordinate.WorkerInfo {
	info := &coordinate.WorkerInfo{
		ID:        w.id,
		Mode:      cloneData(w.mode),
		Data:      cloneData(w.data),
		LastHeard: timeOf(w.lastHeard),
		Expires:   timeOf(w.expires),
	}
	if w.parent != nil {
		p := *w.parent
		info.Parent = &p
	}
	return info
}

// cloneData copies user data; absent data becomes CBOR null.
func cloneData(d []byte) []byte {
	if len(d) == 0 {
		return []byte{0xf6}
	}
	return append([]byte(nil), d...)
}
