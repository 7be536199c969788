package jobserver

import (
	"errors"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// Options of get_work and update_work_unit for Go workers (docs/compat.md,
// "Go workers"). The Python client never sends them, and a daemon that
// does not know them (the Python one, an older coordinated) ignores them,
// so they change nothing for legacy clients:
//
//   - get_work `runtime` (string) and `tasks` (list of strings): lease only
//     specs with this `runtime` whose task (`task`, else the spec's name) is
//     listed. Without `runtime` a request sees only specs with no runtime,
//     which is why Python workers never receive `runtime: go` specs.
//   - get_work `lease_token` (true): each work tuple gets the lease token as
//     a fourth element: (spec, key, data, token).
//   - get_work `wait` (seconds): when there is no work, wait up to this long
//     (at most MaxGetWorkWait) for some to arrive (longpoll.go).
//   - update_work_unit `lease_token` (integer): apply the update only if the
//     unit is still PENDING under that lease, else answer (False, "lease
//     lost ...") and change nothing, so a worker whose lease expired and
//     was given to another cannot overwrite the newer result.
const (
	optRuntime    = "runtime"
	optTasks      = "tasks"
	optLeaseToken = "lease_token"
	optWait       = "wait"
)

// goWorkerRequest reads get_work's Go-worker options into req and reports
// whether the reply should carry lease tokens and how long to wait for
// work.
func goWorkerRequest(opts options, req *coordinate.WorkRequest) (tokens bool, wait time.Duration, err error) {
	if opts.present(optRuntime) {
		rt, err := decodeName(opts[optRuntime], optRuntime)
		if err != nil {
			return false, 0, err
		}
		if rt.Bytes != "" {
			req.Runtimes = []string{rt.Bytes}
		}
	}
	if opts.present(optTasks) {
		names, err := decodeNames(opts[optTasks], optTasks)
		if err != nil {
			return false, 0, err
		}
		req.Tasks = nameBytes(names) // never nil: an empty list leases nothing
	}
	if opts.present(optLeaseToken) {
		if tokens, err = decodeTruth(opts[optLeaseToken], optLeaseToken); err != nil {
			return false, 0, err
		}
	}
	if opts.present(optWait) {
		sec, err := decodeNumber(opts[optWait], optWait)
		if err != nil {
			return false, 0, err
		}
		if sec > 0 {
			wait = min(MaxGetWorkWait, secondsDuration(sec))
		}
	}
	return tokens, wait, nil
}

// leaseToken reads update_work_unit's `lease_token` option: the lease the
// update is fenced by, or 0 when the update is not fenced.
func leaseToken(opts options) (int64, error) {
	if !opts.present(optLeaseToken) {
		return 0, nil
	}
	id, err := decodeInt(opts[optLeaseToken], optLeaseToken)
	if err != nil {
		return 0, err
	}
	if id <= 0 {
		return 0, valueError("lease_token must be a token get_work returned, not %d", id)
	}
	return id, nil
}

// isLostLease reports whether a fenced update failed because the lease is
// no longer the unit's current one.
func isLostLease(err error) bool { return errors.Is(err, coordinate.ErrLostLease) }
