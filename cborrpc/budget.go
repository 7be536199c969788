package cborrpc

import (
	"fmt"
	"sync"
	"time"
)

// RequestBudget bounds the bytes of requests in flight across every
// connection of a server: bytes a reader has buffered for a request it is
// still reading, or has handed to a handler that has not answered yet.
// Each connection may hold FreeBytes without charge, so ordinary requests
// are served even while a few large ones hold the whole budget; beyond
// that a connection waits up to Wait for budget and is then closed.
type RequestBudget struct {
	limit int64
	wait  time.Duration

	mu      sync.Mutex
	used    int64
	changed chan struct{} // closed and replaced whenever used drops
}

// FreeBytes is what one connection's request may hold without charge to
// the budget: larger than what ordinary requests take.
const FreeBytes = 64 << 10

// NewRequestBudget returns a budget of limit bytes; a connection that
// needs more waits up to wait for other requests to finish.
func NewRequestBudget(limit int64, wait time.Duration) *RequestBudget {
	return &RequestBudget{limit: limit, wait: wait, changed: make(chan struct{})}
}

// Limit is the budget's size in bytes.
func (b *RequestBudget) Limit() int64 { return b.limit }

// InUse returns the bytes currently charged.
func (b *RequestBudget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// budgetError reports a request that could not get budget in time.
type budgetError struct {
	want, used, limit int64
	waited            time.Duration
}

func (e *budgetError) Error() string {
	if e.waited == 0 {
		return fmt.Sprintf("request needs %d more bytes than the daemon-wide request budget of %d holds", e.want, e.limit)
	}
	return fmt.Sprintf("daemon-wide request budget exhausted: %d more bytes wanted, %d of %d in use for %s",
		e.want, e.used, e.limit, e.waited)
}

// acquire charges n bytes, waiting up to the budget's wait time (or until
// stop is closed) for other requests to release enough.
func (b *RequestBudget) acquire(n int64, stop <-chan struct{}) error {
	if n > b.limit {
		return &budgetError{want: n, limit: b.limit}
	}
	var timer *time.Timer
	start := time.Now()
	for {
		b.mu.Lock()
		if b.used+n <= b.limit {
			b.used += n
			b.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return nil
		}
		changed, used := b.changed, b.used
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(b.wait)
		}
		select {
		case <-changed:
		case <-timer.C:
			return &budgetError{want: n, used: used, limit: b.limit, waited: time.Since(start).Round(time.Millisecond)}
		case <-stop:
			timer.Stop()
			return &budgetError{want: n, used: used, limit: b.limit, waited: time.Since(start).Round(time.Millisecond)}
		}
	}
}

// release returns n bytes and wakes every waiter.
func (b *RequestBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// requestMemory is one connection's account: the capacity its reader has
// allocated for the current request, of which everything past FreeBytes
// is charged to the shared budget (nil on a client: no budget).
type requestMemory struct {
	budget  *RequestBudget
	stop    <-chan struct{}
	held    int64 // capacity allocated for the current request
	charged int64 // part of held charged to budget
}

// charge accounts for n more bytes of buffer capacity.
func (m *requestMemory) charge(n int64) error {
	m.held += n
	if m.budget == nil {
		return nil
	}
	want := max(m.held-FreeBytes, 0) - m.charged
	if want <= 0 {
		return nil
	}
	if err := m.fits(m.held); err != nil {
		m.held -= n
		return err
	}
	if err := m.budget.acquire(want, m.stop); err != nil {
		m.held -= n
		return err
	}
	m.charged += want
	return nil
}

// fits reports a request of size bytes that could never be held, however
// long it waited: more than the whole budget plus the free allowance.
func (m *requestMemory) fits(size int64) error {
	if m.budget == nil || size-FreeBytes <= m.budget.limit {
		return nil
	}
	return &budgetError{want: size - FreeBytes, limit: m.budget.limit}
}

// release ends the current request: its buffer belongs to the handler
// (or the garbage collector) now.
func (m *requestMemory) release() {
	if m.budget != nil {
		m.budget.release(m.charged)
	}
	m.held, m.charged = 0, 0
}
