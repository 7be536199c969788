package cachekeep

import "sync"

// backgroundRun is maintenance the Keeper starts itself (ANALYZE after
// bulk loads, VACUUM behind claims): work is counted as it happens, and
// once the count since the last run reaches a threshold one run starts in
// the background. Runs never overlap; the count restarts when a run
// starts.
type backgroundRun struct {
	mu      sync.Mutex
	count   int64
	running bool
	wg      sync.WaitGroup
	idle    chan struct{} // closed when the run under way ends (settle)
}

// add counts n and, when the count reaches threshold and no run is going,
// starts run in a goroutine.
func (r *backgroundRun) add(n, threshold int64, run func()) {
	r.mu.Lock()
	r.count += n
	due := !r.running && r.count >= threshold
	if due {
		r.running = true
		r.count = 0
		r.idle = make(chan struct{})
		r.wg.Add(1)
	}
	r.mu.Unlock()
	if !due {
		return
	}
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			r.running = false
			close(r.idle)
			r.mu.Unlock()
		}()
		run()
	}()
}

// wait waits for a run in progress (at Close, when nothing adds).
func (r *backgroundRun) wait() { r.wg.Wait() }

// settle waits for the run under way, if any, while work may still be
// added.
func (r *backgroundRun) settle() {
	r.mu.Lock()
	idle := r.idle
	if !r.running {
		idle = nil
	}
	r.mu.Unlock()
	if idle != nil {
		<-idle
	}
}
