package memory

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/fxamacker/cbor/v2"
)

// fullWalkExpire is the expiry pass without state.due: every spec, in
// name order.
func fullWalkExpire(s *state, now int64) {
	s.expiring = true
	defer func() { s.expiring = false }()
	s.endLeasesOfDeadOwners(now)
	for _, name := range sortedSpecNames(s.specs) {
		s.expireSpec(s.specs[name], now)
	}
	s.workers.expire(now)
}

// fullWalkNeedsExpire is needsExpire without state.due.
func fullWalkNeedsExpire(s *state, now int64) bool {
	for _, sp := range s.specs {
		if u := sp.delayed.top(); u != nil && u.notBefore <= now {
			return true
		}
		if u := sp.pending.top(); u != nil && u.expiration < now {
			return true
		}
	}
	return s.workers.needsExpire(now)
}

// The expiry pass visits only the specs state.due says are due; on random
// states it must change exactly what a walk of every spec changes, in the
// same order (heap positions and event counts included), and needsExpire
// must agree with a full scan. A spec left out of the due order, or filed
// under a stale time, shows up as a unit the full walk expired and the
// pass did not.
func TestExpiryPassMatchesFullWalk(t *testing.T) {
	for seed := range uint64(150) {
		rng := rand.New(rand.NewPCG(seed, 7))
		a, b := newState(), newState()
		now := int64(1_700_000_000) * int64(time.Second)
		for step := range 200 {
			if rng.IntN(5) == 0 {
				now += int64(rng.IntN(20)) * int64(time.Second)
				if got, want := a.needsExpire(now), fullWalkNeedsExpire(b, now); got != want {
					t.Fatalf("seed %d step %d: needsExpire says %v, a full scan %v", seed, step, got, want)
				}
				(&opExpire{Now: now}).apply(a)
				fullWalkExpire(b, now)
				if got, want := dump(a)+events(a), dump(b)+events(b); got != want {
					t.Fatalf("seed %d step %d: the expiry pass and a full walk differ:\npass:\n%s\nfull walk:\n%s", seed, step, got, want)
				}
				checkInvariants(t, a)
				continue
			}
			mk := randomOp(t, rng, a, now)
			if mk == nil {
				continue
			}
			mk().apply(a)
			mk().apply(b)
		}
	}
}

func events(s *state) string {
	var out string
	for _, name := range sortedSpecNames(s.specs) {
		out += fmt.Sprintf("events %q %+v\n", name, s.specs[name].events)
	}
	return out
}

// randomOp picks an op that fits s, returning a constructor so that each
// state gets its own copy (apply records into some ops).
func randomOp(t *testing.T, rng *rand.Rand, s *state, now int64) func() op {
	enc := func(v any) []byte {
		b, err := cbor.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	name := fmt.Sprintf("s%d", rng.IntN(8))
	seconds := func(n int) time.Duration { return time.Duration(1+rng.IntN(n)) * time.Second }
	worker := coordinate.Name{Bytes: fmt.Sprintf("w%d", rng.IntN(4)), Text: true}
	switch r := rng.IntN(100); {
	case r < 10:
		def := enc(map[string]any{"name": name, "max_retries": rng.IntN(3)})
		return func() op { return &opSetWorkSpec{Definition: def} }
	case s.specs[name] == nil:
		return nil
	case r < 50:
		var units []coordinate.WorkUnitInput
		for range 1 + rng.IntN(4) {
			u := coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("k%d", rng.IntN(20))}, Data: coordinate.EmptyMap}
			if rng.IntN(2) == 0 {
				u.Delay = seconds(60)
			}
			if rng.IntN(4) == 0 {
				u.DependsOn = []coordinate.UnitRef{{Spec: fmt.Sprintf("s%d", rng.IntN(8)), Key: fmt.Sprintf("k%d", rng.IntN(20))}}
			}
			if rng.IntN(4) == 0 {
				u.Group = fmt.Sprintf("g%d", rng.IntN(2))
			}
			units = append(units, u)
		}
		return func() op { return &opAddWorkUnits{Spec: name, Now: now, Units: units} }
	case r < 80:
		count, lease := 1+rng.IntN(3), seconds(60)
		return func() op {
			return &opGetWork{Now: now, Worker: worker, Lease: lease, Spec: name, Count: count}
		}
	case r < 94:
		data := enc(map[string]bool{coordinate.ReleaseLeasesKey: rng.IntN(2) == 0})
		hb := coordinate.Heartbeat{Worker: worker, Mode: coordinate.Null, Data: data, Expire: seconds(40)}
		return func() op { return &opHeartbeat{Now: now, Heartbeat: hb} }
	case r < 99:
		return func() op { return &opDeleteWorkSpec{Spec: name, Now: now} }
	default:
		return func() op { return &opClear{} }
	}
}
