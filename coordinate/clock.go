package coordinate

import (
	"slices"
	"sync"
	"time"
)

// SystemClock is the real wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc: f runs in its own goroutine after d. It
// returns the timer's Stop.
func (SystemClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return time.AfterFunc(d, f).Stop
}

// FakeClock is a Clock that moves only when told to. It is safe for
// concurrent use.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

// fakeTimer is one pending AfterFunc of a FakeClock.
type fakeTimer struct {
	at time.Time
	f  func()
}

// NewFakeClock returns a FakeClock set to t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t} }

// Now returns the clock's current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Add moves the clock forward by d, then runs the AfterFunc callbacks that
// became due, in time order, in the caller's goroutine.
func (c *FakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.fire()
}

// Set moves the clock to t, then runs the AfterFunc callbacks that became
// due as Add does.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.fire()
}

// AfterFunc arranges for f to run once the clock has moved d past now: a
// later Add or Set runs it synchronously, so a test knows it has run when
// Add returns. With d <= 0, f runs at once in its own goroutine (as
// time.AfterFunc does). stop cancels a callback that has not run and
// reports whether it had not.
func (c *FakeClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	if d <= 0 {
		go f()
		return func() bool { return false }
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		i := slices.Index(c.timers, t)
		if i < 0 {
			return false
		}
		c.timers = slices.Delete(c.timers, i, i+1)
		return true
	}
}

// fire runs the due callbacks; c.mu is held on entry and released before
// any callback runs, so callbacks may use the clock.
func (c *FakeClock) fire() {
	var due []*fakeTimer
	c.timers = slices.DeleteFunc(c.timers, func(t *fakeTimer) bool {
		if t.at.After(c.now) {
			return false
		}
		due = append(due, t)
		return true
	})
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *fakeTimer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.f()
	}
}
