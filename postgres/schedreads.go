package postgres

import (
	"context"
	"strings"
	"sync"

	"github.com/coordinated/coordinated/coordinate"
)

// Shared scheduler reads. Every get_work starts by reading the scheduler's
// view of the namespace (candidates.sql), which costs
// in proportion to the number of specs: with 100 specs it was more
// database time than all the claims and finishes together (docs/postgres.md
// has the figures). Concurrent get_work calls now share
// one read: a call joins the next read to start, never one already
// running, so what it sees was read after it arrived, exactly as if it
// had read alone at that moment. Calls that arrive together therefore see
// the same state, as they could before when their reads ran side by side.

// schedReads coalesces the scheduler reads of one namespace, per spec
// filter.
type schedReads struct {
	mu    sync.Mutex
	byKey map[string]*schedReadQueue
}

// schedReadQueue is the read running for one filter and the one waiting
// to start after it.
type schedReadQueue struct {
	running *schedRead // nil when none runs
	next    *schedRead // gathering callers; nil when none waits
}

// schedRead is one shared read and its result.
type schedRead struct {
	done    chan struct{}
	callers int // calls sharing it; fixed once the read starts
	cands   []candidate
	err     error
}

// sharedCandidates returns the scheduler's view for req, from a read that
// started after this call did, shared with the calls that arrived while
// the previous read of the same filter ran; shared reports whether other
// calls got the same read.
func (ns *namespace) sharedCandidates(ctx context.Context, req coordinate.WorkRequest) (cands []candidate, shared bool, err error) {
	return ns.reads.do(ctx, strings.Join(req.WorkSpecs, "\x00"), func(ctx context.Context) ([]candidate, error) {
		return ns.candidates(ctx, req, ns.now(), false)
	})
}

// do returns the result of a call of read that started after do was
// called, sharing it with the other callers of the same key that arrived
// while the previous read of key ran, and whether it was shared. Each
// caller gets its own slice.
func (sr *schedReads) do(ctx context.Context, key string, read func(context.Context) ([]candidate, error)) ([]candidate, bool, error) {
	sr.mu.Lock()
	if sr.byKey == nil {
		sr.byKey = map[string]*schedReadQueue{}
	}
	q := sr.byKey[key]
	if q == nil {
		q = &schedReadQueue{}
		sr.byKey[key] = q
	}
	r, lead := q.next, false
	if r == nil {
		r, lead = &schedRead{done: make(chan struct{})}, true
		q.next = r
	}
	r.callers++
	sr.mu.Unlock()

	if lead {
		sr.lead(ctx, key, q, r, read)
	} else {
		select {
		case <-r.done:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	if r.err != nil {
		if lead {
			return nil, false, r.err
		}
		// The leader's read failed, perhaps only because its caller gave
		// up: read alone.
		cands, err := read(ctx)
		return cands, false, err
	}
	sr.mu.Lock()
	shared := r.callers > 1
	sr.mu.Unlock()
	return append([]candidate(nil), r.cands...), shared, nil
}

// lead waits for the read running for key to end, then runs r, which
// gathers callers until it starts.
func (sr *schedReads) lead(ctx context.Context, key string, q *schedReadQueue, r *schedRead, read func(context.Context) ([]candidate, error)) {
	for {
		sr.mu.Lock()
		running := q.running
		if running == nil {
			q.running, q.next = r, nil
			sr.mu.Unlock()
			break
		}
		sr.mu.Unlock()
		select {
		case <-running.done:
		case <-ctx.Done():
			// The gathered callers read alone instead.
			sr.mu.Lock()
			if q.next == r {
				q.next = nil
			}
			sr.mu.Unlock()
			r.err = ctx.Err()
			close(r.done)
			return
		}
	}
	r.cands, r.err = read(ctx)
	sr.mu.Lock()
	q.running = nil
	if q.next == nil {
		delete(sr.byKey, key)
	}
	sr.mu.Unlock()
	close(r.done)
}
