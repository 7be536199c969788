package coordinate

import (
	"context"
	"time"
)

// Backend is a storage engine holding any number of namespaces.
type Backend interface {
	// Namespace returns the namespace with this name, creating it if
	// needed. The legacy CBOR-RPC protocol uses the namespace "".
	Namespace(ctx context.Context, name string) (Namespace, error)
	// Namespaces lists the namespace names, sorted.
	Namespaces(ctx context.Context) ([]string, error)
	// Close releases the backend's resources.
	Close() error
}

// Namespace is one independent job queue: work specs, their work units and
// the worker registry. Every method is atomic with respect to every other.
// Before any method reads or changes unit state, leases that expired before
// now are treated as expired (the unit is AVAILABLE again, or FAILED when
// max_retries is exhausted).
type Namespace interface {
	Name() string

	// SetWorkSpec creates a spec, or replaces an existing spec's definition
	// and re-derives all of its control settings except NextContinuous.
	// The definition must be a CBOR map with a string `name`; an invalid
	// definition fails with ErrInvalidWorkSpec and changes nothing.
	SetWorkSpec(ctx context.Context, definition Data) (*WorkSpec, error)
	// WorkSpec returns one spec, or ErrNoSuchWorkSpec.
	WorkSpec(ctx context.Context, name string) (*WorkSpec, error)
	// ListWorkSpecs returns specs with name >= start in name order, at most
	// limit (<= 0: all). next is the name of the first spec not returned,
	// or nil when the listing is complete.
	ListWorkSpecs(ctx context.Context, start string, limit int) (specs []*WorkSpec, next *Name, err error)
	// ControlWorkSpec changes control settings. Nothing is applied when it
	// fails (ErrNoSuchWorkSpec, ErrCannotBeContinuous).
	ControlWorkSpec(ctx context.Context, name string, control WorkSpecControl) error
	// DeleteWorkSpec removes a spec and all its units.
	DeleteWorkSpec(ctx context.Context, name string) error
	// Clear removes every spec and unit and returns how many specs there were.
	Clear(ctx context.Context) (int, error)
	// ImportWorkSpec creates a spec and its units exactly as given (see
	// ImportedWorkSpec), all or nothing. It fails with ErrWorkSpecExists
	// if a spec of that name exists, and with the errors of ResolveImport
	// on invalid input. Units of other specs that depend on the imported
	// keys are not resolved or failed by the import.
	ImportWorkSpec(ctx context.Context, spec *ImportedWorkSpec) error

	// AddWorkUnits adds units to a spec (SEMANTICS §5.5 for existing
	// keys). A later item with the same key wins. Adding a dependency edge
	// that would close a cycle fails with ErrCycle and adds nothing.
	AddWorkUnits(ctx context.Context, spec string, units []WorkUnitInput) error
	// CountWorkUnits counts a spec's units by reported status, including
	// archived units. Statuses with no units are absent.
	CountWorkUnits(ctx context.Context, spec string) (map[Status]int, error)
	// ListWorkUnits lists units (see WorkUnitQuery for the order).
	ListWorkUnits(ctx context.Context, spec string, query WorkUnitQuery) ([]*WorkUnit, error)
	// GetWorkUnits returns the named units in request order, nil for keys
	// that do not exist.
	GetWorkUnits(ctx context.Context, spec string, keys []string) ([]*WorkUnit, error)
	// PrioritizeWorkUnits sets (priority non-nil) or adjusts the priority
	// of the named units in any state; unknown keys are ignored. It
	// returns how many units it changed (a unit named twice counts once).
	PrioritizeWorkUnits(ctx context.Context, spec string, keys []string, priority *float64, adjustment float64) (int, error)
	// DeleteWorkUnits deletes units and returns how many were deleted
	// (including archived counts it reset).
	DeleteWorkUnits(ctx context.Context, spec string, query DeleteQuery) (int, error)
	// UpdateWorkUnit applies the legacy update_work_unit transition table
	// (SEMANTICS §5.3) with no ownership check. Finishing a unit whose spec
	// has `then` creates the chained units before returning.
	UpdateWorkUnit(ctx context.Context, spec, key string, update WorkUnitUpdate) error
	// RetryWorkUnits makes the named units of spec that are FAILED now
	// AVAILABLE again, as UpdateWorkUnit with status AVAILABLE does (BLOCKED
	// while they wait on dependencies), and returns how many it retried.
	// Units in any other status and unknown keys are left alone, so a unit
	// leased since the caller listed it keeps its lease. Each unit's retry
	// is atomic, the batch as a whole need not be: a reader may see some
	// units retried and others not yet.
	RetryWorkUnits(ctx context.Context, spec string, keys []string) (int, error)
	// Archive applies a retention policy to the FINISHED and FAILED units
	// of the named specs (all specs when names is empty).
	Archive(ctx context.Context, names []string, policy RetentionPolicy) error

	// GetWork chooses one spec with the scheduler and leases up to
	// MaxJobs of its best available units (or one new continuous unit)
	// to the worker. No work is an empty slice and no error.
	GetWork(ctx context.Context, req WorkRequest) ([]Attempt, error)
	// UpdateAttempt is UpdateWorkUnit for the holder of a lease: it fails
	// with ErrLostLease unless the unit is still PENDING under that lease.
	UpdateAttempt(ctx context.Context, ref AttemptRef, update WorkUnitUpdate) error

	// WorkerHeartbeat creates or replaces a worker record.
	WorkerHeartbeat(ctx context.Context, hb Heartbeat) error
	// UnregisterWorker removes a worker record (ErrNoSuchWorker if absent).
	// Its leases are not touched, unless its heartbeat data asked for it
	// (ReleasesLeasesOnExit): then they end now as if they had expired, as
	// they do when such a worker's record expires.
	UnregisterWorker(ctx context.Context, id string) error
	// Workers lists live workers ordered by id.
	Workers(ctx context.Context) ([]*WorkerInfo, error)
	// Worker returns one live worker, or ErrNoSuchWorker.
	Worker(ctx context.Context, id string) (*WorkerInfo, error)
	// ChildWorkUnits lists the live children of a parent worker with their
	// outstanding units (SEMANTICS §11.3), ordered by child id.
	ChildWorkUnits(ctx context.Context, parent string) ([]ChildWorker, error)

	// GroupStatus reports the units carrying this group name.
	GroupStatus(ctx context.Context, group string) (*GroupStatus, error)
	// StalledGroups reports every group that is stalled now: it has
	// AVAILABLE units and none of its units changed status for the
	// backend's stall timeout. Ordered by group name.
	StalledGroups(ctx context.Context) ([]*GroupStatus, error)
	// CancelGroup fails every unfinished unit of the group with reason
	// "cancelled" and returns how many it failed. Current leases on them
	// are lost.
	CancelGroup(ctx context.Context, group string) (int, error)

	// Locker is the namespace's lock service (locks.go), shared by every
	// daemon using the backend.
	Locker
}

// Clock tells the time. Backends take one so tests can control time.
type Clock interface {
	Now() time.Time
}
