package coordinate

import "errors"

// Sentinel errors. Backends wrap them with the names concerned, e.g.
// fmt.Errorf("%w %q", ErrNoSuchWorkSpec, name); callers test with errors.Is.
var (
	// ErrNoSuchWorkSpec: the named work spec does not exist.
	ErrNoSuchWorkSpec = errors.New("no such work spec")
	// ErrWorkSpecExists: ImportWorkSpec found a spec of that name.
	ErrWorkSpecExists = errors.New("work spec already exists")
	// ErrNoSuchWorkUnit: the named work unit does not exist in its spec.
	ErrNoSuchWorkUnit = errors.New("no such work unit")
	// ErrNoSuchWorker: the worker is not registered or has expired.
	ErrNoSuchWorker = errors.New("no such worker")
	// ErrInvalidWorkSpec: a definition or control change was rejected;
	// the message names the key at fault.
	ErrInvalidWorkSpec = errors.New("invalid work spec")
	// ErrInvalidWorkUnit: a unit to add or an update was malformed.
	ErrInvalidWorkUnit = errors.New("invalid work unit")
	// ErrCannotBeContinuous: continuous requested for a spec whose
	// definition lacks `continuous: true`.
	ErrCannotBeContinuous = errors.New("work spec cannot be continuous")
	// ErrNothingToDo: an update with neither a status nor a lease time.
	ErrNothingToDo = errors.New("nothing to do")
	// ErrLostLease: the attempt is no longer the unit's current lease
	// (expired and re-leased, completed, cancelled or deleted).
	ErrLostLease = errors.New("lease lost")
	// ErrCycle: a dependency edge would close a cycle.
	ErrCycle = errors.New("dependency cycle")
)
