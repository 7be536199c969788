package memory

import (
	"math/rand"
	"slices"
	"strconv"
	"testing"

	"github.com/coordinated/coordinated/coordinate"
)

// expiredBefore visits only the expired part of the heap; it must find
// exactly the records a walk of every worker finds.
func TestExpiredBeforeMatchesFullWalk(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 200; round++ {
		var r workerRegistry
		n := rng.Intn(60)
		for i := 0; i < n; i++ {
			w := &worker{id: coordinate.Name{Bytes: strconv.Itoa(i)}, expires: int64(rng.Intn(100))}
			r.byExpiry.push(w)
		}
		now := int64(rng.Intn(110))
		var want, got []string
		for _, w := range r.byExpiry {
			if w.expires < now {
				want = append(want, w.id.Bytes)
			}
		}
		for _, w := range r.expiredBefore(now) {
			got = append(got, w.id.Bytes)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d, now %d: expiredBefore found %v, a full walk %v", round, now, got, want)
		}
	}
}
