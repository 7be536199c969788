package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// ErrNotPending is returned by an Attempt's methods once its fate is set
// (by the task, by the library after expiry or a panic) or while another
// update of it is in flight.
var ErrNotPending = errors.New("attempt is not pending")

// attemptState is where an Attempt is in its life.
type attemptState uint8

const (
	statePending  attemptState = iota
	stateUpdating              // an update is in flight
	stateFinished
	stateFailed
	stateReleased // given back (AVAILABLE)
	stateLost     // the queue no longer holds our lease
)

// Attempt is one leased work unit handed to a Task.
type Attempt struct {
	b *batch
	a coordinate.Attempt

	// Guarded by b.mu.
	state   attemptState
	granted time.Time // when the current lease was granted or renewed
	expires time.Time
}

// Spec is the name of the unit's work spec.
func (a *Attempt) Spec() string { return a.a.Spec.Bytes }

// Key is the unit's key.
func (a *Attempt) Key() string { return a.a.Key.Bytes }

// Data is the unit's data as leased: one CBOR item.
func (a *Attempt) Data() coordinate.Data { return a.a.Data }

// Priority is the unit's priority when it was leased.
func (a *Attempt) Priority() float64 { return a.a.Priority }

// dataDecoder decodes unit data; byte strings (Python 2's str) may land in
// Go strings.
var dataDecoder = func() cbor.DecMode {
	dm, err := cbor.DecOptions{
		ByteStringToString:  cbor.ByteStringToStringAllowed,
		FieldNameByteString: cbor.FieldNameByteStringAllowed,
	}.DecMode()
	if err != nil {
		panic(err)
	}
	return dm
}()

// Unmarshal decodes the unit's data into v. Byte strings, as Python 2
// clients send strings, decode into Go strings as well as []byte.
func (a *Attempt) Unmarshal(v any) error {
	if err := dataDecoder.Unmarshal(a.a.Data, v); err != nil {
		return fmt.Errorf("work unit %s: data: %w", a, err)
	}
	return nil
}

// DataWith returns the unit's data with the text keys of set added or
// replaced (values encoded as CBOR, keys in sorted order), the other
// entries kept verbatim: the data to finish with, e.g. with an "output"
// map for a spec with `then`.
func (a *Attempt) DataWith(set map[string]any) (coordinate.Data, error) {
	data := a.a.Data
	for _, k := range slices.Sorted(maps.Keys(set)) {
		v, err := cbor.Marshal(set[k])
		if err != nil {
			return nil, fmt.Errorf("work unit %s: encoding %q: %w", a, k, err)
		}
		data = coordinate.SetDataKey(data, k, v)
	}
	return data, nil
}

// Expires is when the current lease expires.
func (a *Attempt) Expires() time.Time {
	a.b.mu.Lock()
	defer a.b.mu.Unlock()
	return a.expires
}

func (a *Attempt) String() string { return fmt.Sprintf("%q/%q", a.a.Spec.Bytes, a.a.Key.Bytes) }

// Finish marks the unit FINISHED; data, when non-nil, replaces its data
// (a spec with `then` chains from it).
func (a *Attempt) Finish(ctx context.Context, data coordinate.Data) error {
	return a.complete(ctx, coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished, Data: data}, stateFinished)
}

// Fail marks the unit FAILED; data, when non-nil, replaces its data.
func (a *Attempt) Fail(ctx context.Context, data coordinate.Data) error {
	return a.complete(ctx, coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed, Data: data}, stateFailed)
}

// FailWith marks the unit FAILED with err's text as the `traceback` of its
// data, as the Python worker reports a failure.
func (a *Attempt) FailWith(ctx context.Context, err error) error {
	return a.Fail(ctx, coordinate.WithTraceback(a.a.Data, err.Error()))
}

// Retry gives the unit back (AVAILABLE) for any worker to lease again;
// data, when non-nil, replaces its data.
func (a *Attempt) Retry(ctx context.Context, data coordinate.Data) error {
	return a.complete(ctx, coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable, Data: data}, stateReleased)
}

// Renew extends the lease to d from now and moves the batch's
// cancellation and failure deadlines accordingly. A d above
// coordinate.MaxLease (24 h) renews for MaxLease: the queue would turn it
// into 5 minutes.
func (a *Attempt) Renew(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("work unit %s: renew for %v: the lease must be positive", a, d)
	}
	d = min(d, coordinate.MaxLease) // coordinate.ClampRenewLease
	granted := a.b.w.cfg.Clock.Now()
	return a.update(ctx, coordinate.WorkUnitUpdate{LeaseTime: &d}, func() {
		a.state = statePending
		a.granted, a.expires = granted, granted.Add(d)
	})
}

// complete sets the attempt's fate.
func (a *Attempt) complete(ctx context.Context, upd coordinate.WorkUnitUpdate, final attemptState) error {
	return a.update(ctx, upd, func() { a.state = final })
}

// update sends one update under the attempt's lease. Only one update of an
// attempt is in flight at a time and no lock is held while it is; ok runs
// under the batch lock when it succeeds. A lost lease ends the attempt; any
// other error leaves it pending.
func (a *Attempt) update(ctx context.Context, upd coordinate.WorkUnitUpdate, ok func()) error {
	b := a.b
	b.mu.Lock()
	if a.state != statePending {
		st := a.state
		b.mu.Unlock()
		return fmt.Errorf("work unit %s: %w (%s)", a, ErrNotPending, st)
	}
	a.state = stateUpdating
	b.mu.Unlock()

	ref := coordinate.AttemptRef{Spec: a.a.Spec.Bytes, Key: a.a.Key.Bytes, ID: a.a.ID}
	err := b.w.q.UpdateAttempt(ctx, ref, upd)

	b.mu.Lock()
	switch {
	case err == nil:
		ok()
	case errors.Is(err, coordinate.ErrLostLease):
		a.state = stateLost
	default:
		a.state = statePending
	}
	b.rearmLocked()
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("work unit %s: %w", a, err)
	}
	return nil
}

func (s attemptState) String() string {
	switch s {
	case statePending:
		return "pending"
	case stateUpdating:
		return "being updated"
	case stateFinished:
		return "finished"
	case stateFailed:
		return "failed"
	case stateReleased:
		return "given back"
	case stateLost:
		return "lease lost"
	}
	return fmt.Sprintf("state %d", s)
}
