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
