package coordinate

import (
	"fmt"
	"time"
)

// UnitState is the part of a unit the update_work_unit state machine reads
// and writes.
type UnitState struct {
	// Status is AVAILABLE, PENDING, FINISHED or FAILED (never an expired
	// lease: callers expire leases first). A BLOCKED unit is treated as
	// AVAILABLE by ApplyUpdate; callers decide whether it stays blocked.
	Status     Status
	Data       Data
	Expiration time.Time // legacy lease_time field
	Worker     *Name
}

// UpdateEffect tells the caller what an update did beyond the new state.
type UpdateEffect struct {
	Chain     bool // the unit became FINISHED from a non-FINISHED status: run chaining
	Completed bool // the unit became FINISHED or FAILED (drop it from workers' outstanding sets)
	Released  bool // the unit became AVAILABLE from PENDING or completed (lease and worker cleared)
	Leased    bool // the unit became PENDING or its lease changed
	// LeaseEnded is set when a lease time not in the future released a
	// PENDING unit (how the Python worker gives a unit back:
	// `lease_time: -1`), rather than a status did: the past expiry asked
	// for (now + lease time). Python kept the holder and showed that time
	// until its lazy sweep, so the holder's outstanding entry keeps it,
	// as it keeps a lapsed lease's (get_child_work_units). A unit given
	// back with status AVAILABLE has none: Python showed it with no
	// worker.
	LeaseEnded time.Time
}

// Check is the validation every update_work_unit request gets before
// anything else is looked at (SEMANTICS §5.3), so it wins over a missing
// spec or unit, as in the Python daemon: neither a status nor a lease
// time is ErrNothingToDo; a status other than 1, 3, 4 or 5 is
// ErrInvalidWorkUnit. It is the one owner of these rules: backends call it
// first in UpdateWorkUnit and UpdateAttempt, ApplyUpdate calls it, and the
// RPC layer calls it where the Python daemon checked, before decoding the
// request's other options.
func (upd WorkUnitUpdate) Check() error {
	if upd.Status == 0 && upd.LeaseTime == nil {
		return ErrNothingToDo
	}
	if upd.Status != 0 {
		return CheckStatusCode(int64(upd.Status))
	}
	return nil
}

// CheckStatusCode is the rule for the status code an update sends: 1, 3,
// 4 or 5, else ErrInvalidWorkUnit. Check applies it to a WorkUnitUpdate,
// whose Status 0 means "no status"; the RPC layer applies it to the code
// as sent, so that 0, or a number past an int, is refused like 7.
func CheckStatusCode(s int64) error {
	if st := Status(s); int64(st) != s || !st.Valid() || st == StatusBlocked {
		return fmt.Errorf("%w: status must be 1, 3, 4 or 5, not %d", ErrInvalidWorkUnit, s)
	}
	return nil
}

// ApplyUpdate is the update_work_unit transition table of SEMANTICS §5.3.
// It is pure: now is the only time it uses.
//
//   - An update Check rejects changes nothing.
//   - Data, when given, always replaces the unit's data.
//   - A lease time above 86400 s becomes 300 s (ClampRenewLease); a lease
//     that would leave a unit PENDING with expiry <= now releases it to
//     AVAILABLE at once instead.
//   - AVAILABLE: lease only sets Expiration; 1 no-op; 3 leases for the given
//     time or 300 s; 4 finishes (chain); 5 fails.
//   - PENDING: lease only renews; 1 releases; 3 renews when a lease is
//     given and records upd.Worker when given; 4 finishes; 5 fails.
//   - FINISHED: lease only overwrites Expiration (legacy quirk); 1 re-queues;
//     3 leases; 4 no-op; 5 ignored ("finish wins").
//   - FAILED: as FINISHED, except 4 finishes (and chains) and 5 is a no-op.
//
// Finishing or failing sets Expiration to now (the completion time) and
// keeps the worker.
func ApplyUpdate(st UnitState, upd WorkUnitUpdate, now time.Time) (UnitState, UpdateEffect, error) {
	if err := upd.Check(); err != nil {
		return st, UpdateEffect{}, err
	}
	var lease time.Duration
	if upd.LeaseTime != nil {
		lease = ClampRenewLease(upd.LeaseTime.Seconds())
	}
	if upd.Data != nil {
		st.Data = upd.Data
	}
	cur := st.Status
	if cur == StatusBlocked {
		cur = StatusAvailable
	}
	var eff UpdateEffect

	release := func() {
		if st.Status != StatusAvailable && st.Status != StatusBlocked {
			eff.Released = true
		}
		if cur != StatusAvailable {
			st.Status = StatusAvailable
		}
		st.Expiration = time.Time{}
		st.Worker = nil
	}
	// leaseFor makes the unit PENDING until now+d, or releases it when
	// that is not in the future.
	leaseFor := func(d time.Duration) {
		if d <= 0 {
			if cur == StatusPending {
				eff.LeaseEnded = now.Add(d)
			}
			release()
			return
		}
		st.Status = StatusPending
		st.Expiration = now.Add(d)
		eff.Leased = true
	}
	complete := func(to Status) {
		eff.Chain = to == StatusFinished && cur != StatusFinished
		eff.Completed = true
		st.Status = to
		st.Expiration = now
	}

	switch upd.Status {
	case 0: // lease time only
		if cur == StatusPending {
			leaseFor(lease)
		} else {
			st.Expiration = now.Add(lease)
		}
	case StatusAvailable:
		if cur != StatusAvailable {
			release()
		}
	case StatusPending:
		switch {
		case cur != StatusPending:
			st.Worker = nil
			if upd.LeaseTime == nil {
				leaseFor(DefaultLease)
			} else {
				leaseFor(lease)
			}
		default:
			if upd.LeaseTime != nil {
				leaseFor(lease)
			}
			if st.Status == StatusPending && upd.Worker != nil {
				w := *upd.Worker
				st.Worker = &w
				eff.Leased = true
			}
		}
	case StatusFinished:
		if cur != StatusFinished {
			complete(StatusFinished)
		}
	case StatusFailed:
		if cur != StatusFinished && cur != StatusFailed {
			complete(StatusFailed)
		}
	}
	return st, eff, nil
}

// StillWaiting is the status of a unit that becomes st (by an update or
// a lease lapsing) while it waits, or not, for dependencies: AVAILABLE
// becomes BLOCKED while any dependency is unmet (a retried unit, or one
// leased by hand while BLOCKED whose lease lapsed, waits again). Both
// backends apply it after ApplyUpdate and ExpireLease; the PostgreSQL
// sweep (postgres/queries/sweep.sql) says it in SQL.
func StillWaiting(st Status, waits bool) Status {
	if st == StatusAvailable && waits {
		return StatusBlocked
	}
	return st
}
