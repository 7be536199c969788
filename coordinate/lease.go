package coordinate

import (
	"fmt"
	"math"
	"strconv"
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

// ClampWorkerExpire turns worker_heartbeat's expire_seconds into a record
// lifetime: negative -> 300 s, above 86400 -> 3600 s. It also returns the
// legacy warning message for the reply ("" when the value was used as is).
func ClampWorkerExpire(seconds float64) (time.Duration, string) {
	switch {
	case seconds < 0 || math.IsNaN(seconds):
		return DefaultLease, fmt.Sprintf("negative expire time %s defaulted to 5 minutes", formatSeconds(seconds))
	case seconds > MaxLease.Seconds():
		return HugeWorkerExpire, fmt.Sprintf("huge expire time %s defaulted to one hour", formatSeconds(seconds))
	}
	return time.Duration(seconds * float64(time.Second)), ""
}

// formatSeconds prints a number the way Python's str() prints an int or a
// simple float.
func formatSeconds(s float64) string {
	if s == math.Trunc(s) && math.Abs(s) < 1e15 {
		return strconv.FormatInt(int64(s), 10)
	}
	return strconv.FormatFloat(s, 'g', -1, 64)
}

// ContinuousKey is the key of a synthetic continuous unit created at now:
// the Unix time "<seconds>.<millis>" (SEMANTICS §9), a byte string like
// every string the Python daemon generated (its str(time.time())).
func ContinuousKey(now time.Time) Name {
	ms := now.UnixMilli()
	return Name{Bytes: fmt.Sprintf("%d.%03d", ms/1000, ms%1000)}
}
