package postgres

import (
	"context"
	"errors"
	"sync"

	"github.com/coordinated/coordinated/coordinate"
)

// errNotFailed answers a RetryWorkUnits request for a unit that is not
// FAILED: it is left alone.
var errNotFailed = errors.New("work unit is not failed")

// RetryWorkUnits queues one conditional update per key with the committer
// at once, so a batch costs a few group-committed transactions (at most
// maxCommitBatch requests each) instead of one per unit.
func (ns *namespace) RetryWorkUnits(ctx context.Context, spec string, keys []string) (int, error) {
	if _, err := ns.lookupSpec(ctx, ns.b.pool, spec, false); err != nil {
		return 0, err
	}
	now := ns.now()
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = ns.b.commits.submit(ctx, &commitItem{upd: &updateRequest{ns: ns, spec: spec, key: k,
				upd: coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable}, onlyFailed: true, now: now}})
		}()
	}
	wg.Wait()
	retried := 0
	for _, err := range errs {
		switch {
		case err == nil:
			retried++
		case errors.Is(err, errNotFailed), errors.Is(err, coordinate.ErrNoSuchWorkUnit):
		default:
			return retried, err
		}
	}
	return retried, nil
}
