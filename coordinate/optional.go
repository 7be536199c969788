package coordinate

import (
	"context"
	"errors"
	"time"
)

// Optional capabilities of a Backend. A daemon or a status page finds them
// with a type assertion; a backend without one simply lacks the
// capability.

// DefaultStallTimeout is the group watchdog's default stall timeout
// (GroupStatus.Stalled) for every backend.
const DefaultStallTimeout = 10 * time.Minute

// ReadyChecker is a Backend that can tell whether it can serve requests
// now (a /readyz check, say). Ready returns nil when it can, else an
// error saying why not (a database that does not answer, a failed
// journal). It returns within ctx's deadline.
type ReadyChecker interface {
	Ready(ctx context.Context) error
}

// FailureNotifier is a Backend that can fail for good while running (the
// memory backend's journal after a write or fsync error). The channel is
// closed when that happens: from then on every change is refused and the
// daemon should stop so that a restart recovers what is stored. A nil
// channel means the backend cannot fail that way.
type FailureNotifier interface {
	Failed() <-chan struct{}
}

// ErrUnavailable: the backend's storage did not answer in time (a stalled
// database). Nothing is known to have been applied; retrying later is safe
// for every method that is safe to repeat.
var ErrUnavailable = errors.New("storage unavailable")

// SharedWork is a Namespace whose storage other processes change too (a
// PostgreSQL database several daemons share). A daemon's long-polling
// get_work calls learn from it of work made available elsewhere: the
// daemon says when its calls wait (Waiting) and when its own changes may
// have made work available (AnnounceWork), and WatchWork wakes its waiters
// when another process announced work. None of these blocks a caller.
type SharedWork interface {
	// Waiting says a get_work call here waits for work for up to d.
	Waiting(d time.Duration)
	// OthersWaiting reports whether another process said its calls wait
	// now, so that an announcement may wake one. It is cheap.
	OthersWaiting() bool
	// AnnounceWork tells the processes that wait that work may have
	// become available. Announcements may be coalesced.
	AnnounceWork()
	// WatchWork calls wake whenever another process announced work, and
	// when the watch itself was interrupted (an announcement may have been
	// missed), until ctx ends; then it returns.
	WatchWork(ctx context.Context, wake func())
}

// DueReporter is a Namespace that can tell when work next becomes
// available by time alone (a delay that ends, a lease that runs out, a
// dead worker's leases given back), so that a long-polling get_work can
// try again then rather than at the end of its wait.
type DueReporter interface {
	// NextDue returns the earliest such time after `after` (the time of
	// the caller's last try; a lease that ran out but is not yet given
	// back counts whenever it ran out), or ok false when nothing is due.
	NextDue(ctx context.Context, after time.Time) (t time.Time, ok bool, err error)
}

// WorkNotifier is a Namespace that says when its own changes made units
// available to hand out now (the memory backend: added, given back,
// retried, released by an expired lease, unblocked by a dependency
// finishing, a max_running slot freed; PostgreSQL: unblocked by a
// dependency finishing, a max_running slot freed by this daemon's
// updates), so a long-polling get_work can try again at once.
type WorkNotifier interface {
	// NotifyWork arranges for f to be called after each such change. f
	// is called without the namespace's locks held and must not block.
	NotifyWork(f func())
}
