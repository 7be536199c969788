package memory

import (
	"sync"

	"github.com/coordinated/coordinated/coordinate"
)

var _ coordinate.WorkNotifier = (*namespace)(nil)

// workListeners are the callbacks a namespace calls after a change made
// units AVAILABLE to hand out now (state.place sets state.madeAvailable):
// units added, given back, retried, released by an expired lease or a
// dead worker, or unblocked by their last dependency finishing; or freed
// a max_running slot of a spec with units waiting.
type workListeners struct {
	mu sync.Mutex
	fs []func()
}

// NotifyWork registers f (coordinate.WorkNotifier).
func (ns *namespace) NotifyWork(f func()) {
	ns.workReady.mu.Lock()
	defer ns.workReady.mu.Unlock()
	ns.workReady.fs = append(ns.workReady.fs[:len(ns.workReady.fs):len(ns.workReady.fs)], f)
}

// unlock releases the namespace lock, then calls the work listeners if
// the changes made under it made units available.
func (ns *namespace) unlock() {
	ready := ns.st.madeAvailable
	ns.st.madeAvailable = false
	ns.mu.Unlock()
	if !ready {
		return
	}
	ns.workReady.mu.Lock()
	fs := ns.workReady.fs
	ns.workReady.mu.Unlock()
	for _, f := range fs {
		f()
	}
}
