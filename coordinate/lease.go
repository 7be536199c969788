package coordinate

import (
	"fmt"
	"math"
	"time"
)

// Lease limits (SEMANTICS §5.3, §6, §11.1).
const (
	// DefaultLease is the lease used when a requested one is invalid.
	DefaultLease = 300 * time.Second
	// MaxLease is the longest lease or worker expiry accepted as given.
	MaxLease = 86400 * time.Second
	// HugeWorkerExpire replaces a worker expiry above MaxLease.
	HugeWorkerExpire = time.Hour
)

// ClampGetWorkLease turns get_work's lease_time seconds into a lease:
// values below 1 or above 86400 (or NaN) become 300 s.
func ClampGetWorkLease(seconds float64) time.Duration {
	if !(seconds >= 1 && seconds <= MaxLease.Seconds()) {
		return DefaultLease
	}
	return time.Duration(seconds * float64(time.Second))
}

// ClampRenewLease turns update_work_unit's lease_time seconds into a lease:
// values above 86400 (or NaN) become 300 s; there is no lower bound (zero
// and negative leases expire at once; very negative ones are kept at
// -86400 s so they cannot overflow).
func ClampRenewLease(seconds float64) time.Duration {
	switch {
	case math.IsNaN(seconds) || seconds > MaxLease.Seconds():
		return DefaultLease
	case seconds < -MaxLease.Seconds():
		return -MaxLease
	}
	return time.Duration(seconds * float64(time.Second))
}

// RequestedLease converts update_work_unit's lease_time seconds to a
// WorkUnitUpdate.LeaseTime, saturating at the Duration range; NaN counts
// as too large. It decides nothing: ApplyUpdate clamps (ClampRenewLease).
func RequestedLease(seconds float64) time.Duration {
	switch ns := seconds * float64(time.Second); {
	case math.IsNaN(ns) || ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	default:
		return time.Duration(ns)
	}
}

// ClampWorkerExpire turns worker_heartbeat's expire_seconds into a record
// lifetime: negative -> 300 s, above 86400 -> 3600 s. It also returns the
// legacy warning message for the reply ("" when the value was used as
// is), which shows the value as shown: the text Python's str() gave the
// value the client sent ("-1.0" for a float, "None" for a null, which
// Python 2 compared below every number).
func ClampWorkerExpire(seconds float64, shown string) (time.Duration, string) {
	switch {
	case seconds < 0 || math.IsNaN(seconds):
		return DefaultLease, fmt.Sprintf("negative expire time %s defaulted to 5 minutes", shown)
	case seconds > MaxLease.Seconds():
		return HugeWorkerExpire, fmt.Sprintf("huge expire time %s defaulted to one hour", shown)
	}
	return time.Duration(seconds * float64(time.Second)), ""
}

// ContinuousKey is the key of a synthetic continuous unit created at now:
// the Unix time "<seconds>.<millis>" (SEMANTICS §9), a byte string like
// every string the Python daemon generated (its str(time.time())).
func ContinuousKey(now time.Time) Name {
	ms := now.UnixMilli()
	return Name{Bytes: fmt.Sprintf("%d.%03d", ms/1000, ms%1000)}
}

// LeaseExpired reports whether a PENDING unit's lease, ending at
// expiration, has expired at now: it ended strictly before now.
func LeaseExpired(expiration, now time.Time) bool { return expiration.Before(now) }

// RetriesExhausted reports whether a unit leased attempts times may not be
// leased again under max_retries (0 = unlimited).
func RetriesExhausted(attempts, maxRetries int) bool { return maxRetries > 0 && attempts > maxRetries }

// ExpireLease is what becomes of a PENDING unit whose lease expired
// (SEMANTICS §5.2, §6). With its spec's max_retries used up it FAILS: its
// data gains the traceback "too many retries", its lease_time field
// becomes now (the completion time) and the worker is kept, as for any
// failure. Otherwise it is AVAILABLE again, with no lease time and no
// worker. Either way the lease itself is gone. This is the one statement
// of the rule: the memory backend and the PostgreSQL backend's locked
// updates call it, and the PostgreSQL sweep (postgres/queries/sweep.sql,
// postgres/sweep.go) says in SQL what it says, naming it.
func ExpireLease(st UnitState, attempts, maxRetries int, now time.Time) UnitState {
	if RetriesExhausted(attempts, maxRetries) {
		st.Status = StatusFailed
		st.Data = WithTraceback(st.Data, TracebackTooManyRetries)
		st.Expiration = now
		return st
	}
	st.Status = StatusAvailable
	st.Expiration = time.Time{}
	st.Worker = nil
	return st
}
