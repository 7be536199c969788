package memory

import (
	"cmp"
	"slices"

	"github.com/coordinated/coordinated/coordinate"
)

// A worker whose heartbeat asked for it (coordinate.ReleasesLeasesOnExit)
// loses its leases when its record goes: they are made to end just before
// now, so the expiry pass of the same opExpire releases them exactly as if
// they had expired (AVAILABLE, or FAILED past max_retries). Everything is
// derived from the state and the op's time, so replay repeats it.

// endLeasesOfDeadOwners shortens the leases of the workers that expire at
// now and asked for the release.
func (s *state) endLeasesOfDeadOwners(now int64) {
	var dead []*worker
	for _, w := range s.workers.expiredBefore(now) {
		if coordinate.ReleasesLeasesOnExit(w.data) {
			dead = append(dead, w)
		}
	}
	slices.SortFunc(dead, func(a, b *worker) int { return cmp.Compare(a.id.Bytes, b.id.Bytes) })
	for _, w := range dead {
		units := make([]*unit, 0, len(w.outstanding))
		for u := range w.outstanding {
			if u.status == coordinate.StatusPending && u.workerKind != noWorker && u.worker == w.id.Bytes && u.expiration >= now {
				units = append(units, u)
			}
		}
		slices.SortFunc(units, func(a, b *unit) int {
			return cmp.Or(cmp.Compare(a.spec.name.Bytes, b.spec.name.Bytes), cmp.Compare(a.key, b.key))
		})
		for _, u := range units {
			s.touch(u)
			u.expiration = now - 1
			u.spec.pending.fix(u)
			s.noteDue(u.spec)
		}
	}
}

// releasesOnExit reports whether the live worker id asked for the release.
func (s *state) releasesOnExit(id string) (*worker, bool) {
	w := s.workers.byID[id]
	return w, w != nil && coordinate.ReleasesLeasesOnExit(w.data)
}
