package memory

// Dirty tracking for delta snapshots (docs/persistence.md, "Delta
// snapshots"). A delta holds only the units that changed since the
// previous snapshot (base or delta), so every change must say which units
// it touched, in O(1) and without ever scanning all units:
//
//   - Each unit carries a dirty epoch (unit.marks bits 1-2: 0 clean, else
//     1 or 2). A unit changed or added while the state's epoch is e and
//     not yet marked e gets e and is appended to its spec's dirty list
//     (state.touch, state.born): each unit is in the list at most once.
//   - A unit deleted leaves its key in its spec's gone list (a tombstone);
//     a key deleted and added again is in both, and the delta applies the
//     tombstones first.
//   - A spec created since the last snapshot is fresh: its units in older
//     snapshots (of a spec of the same name deleted since) are not its own.
//   - At a snapshot's boundary (beginCapture, under the namespace lock)
//     the lists are taken and the epoch flips to the other value, in
//     O(specs). The capture's walk then sets every unit still marked with
//     the old epoch to 0, so that when the epoch comes back to that value
//     no unit carries it by mistake. A unit changed during the walk before
//     the walk reached it is marked with the new epoch (and its boundary
//     value saved, cow.go).
//
// Only journaled namespaces track (state.track); a volatile one would
// grow the lists forever. A whole spec deleted while no capture is under
// way tracks none of its units (spec.untracked): every snapshot lists the
// specs whole, so the next one, without the spec, says its units are
// gone, and deleting a 10M-unit spec would otherwise allocate a dirty
// entry and a tombstone per unit of a spec that no longer exists. While
// a capture is under way the marks stay: the walk relies on every unit
// it saved being marked.

const (
	markSnap   = 1 << 0 // the snapshot mark (cow.go)
	dirtyShift = 1      // the dirty epoch's bits
)

func (u *unit) snapMark() bool { return u.marks&markSnap != 0 }

func (u *unit) setSnapMark(p bool) {
	if p {
		u.marks |= markSnap
	} else {
		u.marks &^= markSnap
	}
}

func (u *unit) dirtyEpoch() uint8 { return u.marks >> dirtyShift }

func (u *unit) setDirtyEpoch(e uint8) { u.marks = u.marks&markSnap | e<<dirtyShift }

// markDirty records that u changed (or was added) since the last snapshot.
func (s *state) markDirty(u *unit) {
	if s.track && u.dirtyEpoch() != s.dirtyEpoch && !u.spec.untracked {
		u.setDirtyEpoch(s.dirtyEpoch)
		u.spec.dirty = append(u.spec.dirty, u)
	}
}

// born must be called for a unit just created: it is settled for the
// capture under way (not in its snapshot) and dirty for the next one.
func (s *state) born(u *unit) {
	u.setSnapMark(s.snapParity)
	s.markDirty(u)
}

// markGone records that u was deleted since the last snapshot.
func (s *state) markGone(u *unit) {
	if s.track && !u.spec.untracked {
		u.spec.gone = append(u.spec.gone, u.key)
	}
}

// otherEpoch is the dirty epoch that follows e.
func otherEpoch(e uint8) uint8 { return 3 - e }
