package coordinate

import (
	"context"
	"fmt"
	"time"
)

// ImportedWorkSpec is a work spec in the exact state another daemon saved
// it (a Python coordinated snapshot, say): its definition, the control
// settings changed since it was set, its archived counts and every unit
// with its status, priority, lease expiry or completion time and worker.
// Namespace.ImportWorkSpec stores it as it is: nothing is derived from the
// units and nothing is triggered (no chaining, no lease sweep first).
type ImportedWorkSpec struct {
	Definition Data // a valid work-spec definition (ParseWorkSpec)
	// Control is applied over the settings derived from Definition, as
	// ControlWorkSpec would.
	Control        WorkSpecControl
	NextContinuous time.Time // zero: none
	// Archived counts units no longer held (SEMANTICS §12), by status
	// FINISHED or FAILED.
	Archived map[Status]int
	Units    []ImportedWorkUnit
}

// BulkImporter is implemented by a Namespace that can import several
// specs atomically, all of them or none, even if the process dies part
// way (the PostgreSQL backend: one transaction). An importer that stores
// spec by spec (pyimport.Load) uses it when the namespace offers it.
type BulkImporter interface {
	// ImportWorkSpecs is ImportWorkSpec for every spec of specs, as one
	// change: on an error nothing is stored and nothing is deleted.
	// Without replace, a spec of one of the names that exists already
	// fails it with ErrWorkSpecExists. With replace, such a spec is
	// deleted first, as DeleteWorkSpec would (the units waiting for its
	// units fail), in the same change, so the old spec stays as it was
	// if the import fails.
	ImportWorkSpecs(ctx context.Context, specs []*ImportedWorkSpec, replace bool) error
}

// ImportChecker is implemented by a Namespace whose ImportWorkSpec may
// refuse, for reasons of the input alone, a spec that ResolveImport
// accepts (the memory backend with a data directory: a spec too large
// for one journal record). An importer that must delete specs before
// storing their replacements one by one (pyimport.Load with replace)
// checks every spec with it first, so input the namespace would refuse
// deletes nothing.
type ImportChecker interface {
	// CheckImport returns the error ImportWorkSpec would return for in
	// because of in itself (ResolveImport's included), or nil. It changes
	// nothing and does not look at what the namespace holds.
	CheckImport(in *ImportedWorkSpec) error
}

// ImportedWorkUnit is one unit of an ImportedWorkSpec.
type ImportedWorkUnit struct {
	Key      Name
	Data     Data // one CBOR item; nil is stored as null
	Status   Status
	Priority float64
	// Expiration is the legacy lease_time: the lease expiry of a PENDING
	// unit (a past expiry makes it AVAILABLE again at the next request),
	// the completion time of a FINISHED or FAILED one, and usually zero
	// otherwise.
	Expiration time.Time
	Worker     *Name // lease holder or last holder; nil for none
}

// ResolveImport validates an ImportedWorkSpec and returns the spec's name
// and its control settings: those derived from the definition with Control
// and NextContinuous applied. Every backend's ImportWorkSpec calls it, so
// they accept and refuse the same input. Errors wrap ErrInvalidWorkSpec,
// ErrCannotBeContinuous or ErrInvalidWorkUnit and name the spec and unit.
func ResolveImport(in *ImportedWorkSpec) (Name, WorkSpecMeta, error) {
	name, meta, err := ParseWorkSpec(in.Definition)
	if err != nil {
		return Name{}, WorkSpecMeta{}, err
	}
	c := in.Control
	if c.Continuous != nil && *c.Continuous && !meta.CanBeContinuous {
		return Name{}, WorkSpecMeta{}, fmt.Errorf("%w: %q", ErrCannotBeContinuous, name.Bytes)
	}
	if c.Paused != nil {
		meta.Paused = *c.Paused
	}
	if c.Continuous != nil {
		meta.Continuous = *c.Continuous
	}
	if c.Interval != nil {
		meta.Interval = max(0, *c.Interval)
	}
	if c.MaxRunning != nil {
		meta.MaxRunning = *c.MaxRunning
	}
	if c.Weight != nil {
		meta.Weight = *c.Weight
	}
	meta.NextContinuous = in.NextContinuous
	for st, n := range in.Archived {
		if !st.Completed() || n < 0 {
			return Name{}, WorkSpecMeta{}, fmt.Errorf("%w: work spec %q: archived count %d for status %d (only finished or failed, not negative)", ErrInvalidWorkSpec, name.Bytes, n, int(st))
		}
	}
	seen := make(map[string]struct{}, len(in.Units))
	for i := range in.Units {
		u := &in.Units[i]
		if u.Status == StatusBlocked || !u.Status.Valid() {
			return Name{}, WorkSpecMeta{}, fmt.Errorf("%w: work spec %q unit %q: cannot import status %d", ErrInvalidWorkUnit, name.Bytes, u.Key.Bytes, int(u.Status))
		}
		if _, dup := seen[u.Key.Bytes]; dup {
			return Name{}, WorkSpecMeta{}, fmt.Errorf("%w: work spec %q: unit %q given twice", ErrInvalidWorkUnit, name.Bytes, u.Key.Bytes)
		}
		seen[u.Key.Bytes] = struct{}{}
	}
	return name, meta, nil
}
