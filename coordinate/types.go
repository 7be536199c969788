package coordinate

import (
	"fmt"
	"time"
)

// Status is a work unit's status, with the legacy wire codes.
type Status int

// Work-unit statuses. A delayed unit (not-before in the future) is reported
// as StatusAvailable but not handed out; a unit waiting on dependencies is
// StatusBlocked.
const (
	StatusAvailable Status = 1
	StatusBlocked   Status = 2
	StatusPending   Status = 3
	StatusFinished  Status = 4
	StatusFailed    Status = 5
)

// Valid reports whether s is one of the five legacy status codes.
func (s Status) Valid() bool { return s >= StatusAvailable && s <= StatusFailed }

// Completed reports whether s is FINISHED or FAILED.
func (s Status) Completed() bool { return s == StatusFinished || s == StatusFailed }

func (s Status) String() string {
	switch s {
	case StatusAvailable:
		return "available"
	case StatusBlocked:
		return "blocked"
	case StatusPending:
		return "pending"
	case StatusFinished:
		return "finished"
	case StatusFailed:
		return "failed"
	}
	return fmt.Sprintf("status(%d)", int(s))
}

// Name is a work-spec name, work-unit key or worker id as it was given:
// arbitrary bytes, plus whether it arrived as a CBOR text string (true) or
// byte string (false). Identity and ordering use Bytes only.
type Name struct {
	Bytes string
	Text  bool
}

// Data is exactly one encoded CBOR data item, stored and returned verbatim.
// A nil Data in an update means "no change"; CBOR null is Data{0xf6}.
type Data []byte

// Null is the CBOR encoding of null.
var Null = Data{0xf6}

// EmptyMap is the CBOR encoding of {}.
var EmptyMap = Data{0xa0}

// UnitRef names one work unit: its spec's name bytes and its key bytes.
type UnitRef struct {
	Spec string
	Key  string
}

func (r UnitRef) String() string { return fmt.Sprintf("%q/%q", r.Spec, r.Key) }

// WorkSpec is a work spec as stored: its definition and control settings.
type WorkSpec struct {
	Name       Name
	Definition Data // the CBOR map given to SetWorkSpec, verbatim
	Meta       WorkSpecMeta
}

// WorkSpecMeta holds the control settings derived from a definition's
// special keys (SEMANTICS §4.2). Some can be changed with ControlWorkSpec
// until the next SetWorkSpec re-derives them.
type WorkSpecMeta struct {
	Priority        int           // spec-level priority (`priority`), higher first
	Weight          int           // `weight`, else max(1, 20-nice); <= 0 never scheduled
	Paused          bool          // `disabled`, or control status 2
	Continuous      bool          // control flag; only on if CanBeContinuous
	CanBeContinuous bool          // `continuous` in the definition
	Interval        time.Duration // `interval`; 0 = none
	NextContinuous  time.Time     // earliest time of the next synthetic unit; kept across SetWorkSpec
	MaxRunning      int           // `max_running`: 0 = unlimited, n > 0 at most n pending, n < 0 none at a time (Python's n+1 <= 0; see EncodeMaxRunning)
	MaxGetwork      int           // `max_getwork`; 0 = unlimited, else >= 1
	MaxRetries      int           // `max_retries`; 0 = unlimited
	MinGB           float64       // `min_gb`; enforced only when a backend is told to
	Then            string        // `then`: successor spec name bytes, "" = none
	ThenPreempts    bool          // `then_preempts`, default true
	Runtime         string        // `runtime`, default ""
	// Task is the task a worker of the spec's runtime runs for its units:
	// `task`, else the spec's name; "" when Runtime is "". It is derived
	// from the definition and not stored on its own (SpecTask).
	Task string
	// Controlled lists the settings ControlWorkSpec set since the
	// definition was (re)stored: get_work_spec_meta shows those from
	// their stored value, the others as the definition gave them (the
	// Python daemon showed the last value given, in either place).
	Controlled ControlledSettings
}

// ControlledSettings is a set of the settings ControlWorkSpec has set
// (WorkSpecMeta.Controlled). Backends store it as an integer: the values
// are part of their formats.
type ControlledSettings uint8

// The settings ControlWorkSpec sets, as ControlledSettings bits. Paused is
// not among them: get_work_spec_meta shows it as a status code either way.
const (
	ControlledContinuous ControlledSettings = 1 << iota
	ControlledInterval
	ControlledMaxRunning
	ControlledWeight
)

// WorkSpecControl changes control settings without touching the definition.
// Nil fields are left alone.
type WorkSpecControl struct {
	Paused     *bool
	Continuous *bool          // turning on requires CanBeContinuous, else ErrCannotBeContinuous
	Interval   *time.Duration // 0 clears
	MaxRunning *int           // encoded as WorkSpecMeta.MaxRunning (EncodeMaxRunning); 0 = unlimited
	Weight     *int
}

// WorkUnitInput is one unit to add (add_work_units item, or a chained output).
type WorkUnitInput struct {
	Key  Name
	Data Data
	// Priority, when non-nil, sets the unit's priority. When nil, a new
	// unit gets 0 and an existing unit keeps its priority.
	Priority *float64
	// Delay, when positive, keeps the unit from being handed out before
	// now+Delay.
	Delay time.Duration
	// DependsOn lists units that must be FINISHED before this one becomes
	// available. They may be in any spec and need not exist yet.
	DependsOn []UnitRef
	// Group is an optional group name ("" = none).
	Group string
}

// WorkUnit is a read-only view of a work unit.
type WorkUnit struct {
	Spec     Name
	Key      Name
	Data     Data
	Status   Status // as reported: expired leases and delayed units are AVAILABLE
	Priority float64
	// Expiration is the legacy lease_time field: the lease expiry of a
	// PENDING unit, the completion time of a FINISHED/FAILED one, and
	// otherwise usually zero (reported as null).
	Expiration time.Time
	// Worker is the lease holder (PENDING) or last holder (FINISHED,
	// FAILED); nil when AVAILABLE.
	Worker    *Name
	NotBefore time.Time // zero = no delay
	Attempts  int       // how many times the unit has been leased
	DependsOn []UnitRef // dependencies not yet FINISHED (BLOCKED units)
	Group     string
}

// WorkUnitQuery selects units for ListWorkUnits.
//
// With Statuses, units in any of those statuses are returned ordered by
// priority (descending) then key, or by key with KeyOrder; without, all
// units ordered by key. Keys below Start are skipped. At most Limit are
// returned (Limit <= 0: no limit).
//
// A listing in key order pages by keyset: the next page starts at the last
// key returned plus a zero byte, so a unit is listed at most once however
// units change status between pages (an offset, or listing the first page
// again, may skip or repeat them).
type WorkUnitQuery struct {
	Statuses []Status
	Start    string
	Limit    int
	// KeyOrder lists units with Statuses by key, as without Statuses.
	KeyOrder bool
	// MaxBytes, when > 0, bounds the data of the units listed as Limit
	// bounds their count (WithinBytes): the backend stops reading units at
	// the first whose data would pass it.
	MaxBytes int64
}

// DeleteQuery selects units for DeleteWorkUnits. All wins over Keys; Keys
// (when non-nil) are restricted to Statuses when Statuses is non-empty;
// Statuses alone deletes every unit in those statuses, including archived
// counts. An empty query deletes nothing.
type DeleteQuery struct {
	All      bool
	Keys     []string
	Statuses []Status
}

// WorkUnitUpdate is one update_work_unit call (SEMANTICS §5.3).
type WorkUnitUpdate struct {
	Status    Status         // 0 = no status change
	LeaseTime *time.Duration // relative to now; <= 0 expires at once
	Data      Data           // nil = keep
	Worker    *Name          // only honoured on PENDING -> PENDING
}

// WorkRequest is one get_work call.
type WorkRequest struct {
	Worker    Name
	LeaseTime time.Duration // already clamped by the caller (see ClampGetWorkLease)
	MaxJobs   int           // values < 1 mean 1
	WorkSpecs []string      // when non-empty, only these specs
	Runtimes  []string      // when nil, only specs with runtime ""
	// Tasks, when non-nil, restricts specs with a runtime to those whose
	// Task is listed: a Go worker lists the tasks it has. Specs without
	// a runtime are not affected.
	Tasks []string
	// AvailableGB is the worker's free memory; 0 means unknown. Only used
	// when the backend enforces min_gb.
	AvailableGB float64
	// MaxBytes, when > 0, bounds the data of the units one call leases
	// (the reply byte budget, docs/limits.md): leasing stops at the first
	// unit that would take the total past it (WithinBytes).
	MaxBytes int64
}

// Attempt is one worker's lease on one unit, as handed out by GetWork.
type Attempt struct {
	Spec     Name
	Key      Name
	Data     Data
	Priority float64
	Worker   Name
	Expires  time.Time
	// ID identifies this lease. UpdateAttempt with a stale ID fails with
	// ErrLostLease.
	ID int64
}

// AttemptRef names a lease for UpdateAttempt.
type AttemptRef struct {
	Spec string
	Key  string
	ID   int64
}

// Heartbeat registers or refreshes a worker (worker_heartbeat).
type Heartbeat struct {
	Worker Name
	Mode   Data  // opaque CBOR value, often a string or null
	Data   Data  // heartbeat environment, verbatim
	Parent *Name // nil = no parent
	Expire time.Duration
}

// WorkerInfo is a live worker record.
type WorkerInfo struct {
	ID        Name
	Mode      Data
	Data      Data
	Parent    *Name
	LastHeard time.Time
	Expires   time.Time
}

// ChildWorker lists one live child of a parent worker and the units it was
// handed that are not yet FINISHED or FAILED.
type ChildWorker struct {
	Worker Name
	Units  []ChildWorkUnit
}

// ChildWorkUnit is one outstanding unit of a child worker, with the unit's
// current lease holder (nil after expiry) and expiry.
type ChildWorkUnit struct {
	Spec   Name
	Key    Name
	Data   Data
	Worker *Name
	// Expires is the lease's expiry while the unit is PENDING. While
	// nobody holds it, it is when the listed worker's lease on it ended,
	// if that lease lapsed or was given back with a lease time not in the
	// future (coordinate.UpdateEffect.LeaseEnded); zero when the unit was
	// given back with a status, or otherwise.
	Expires time.Time
}

// RetentionPolicy is the archive configuration (SEMANTICS §12).
type RetentionPolicy struct {
	MaxCount int           // per spec and status; < 0 = no limit
	MaxAge   time.Duration // 0 = no limit
}

// GroupStatus reports one group of units (an extension beyond the legacy
// protocol).
type GroupStatus struct {
	Group        string
	Counts       map[Status]int
	Complete     bool      // no unit is AVAILABLE, BLOCKED or PENDING
	Stalled      bool      // AVAILABLE units and no status change for the stall timeout
	LastProgress time.Time // last time a unit of the group changed status
}
