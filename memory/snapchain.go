package memory

import (
	"fmt"
	"io"
	"time"

	"github.com/coordinated/coordinated/journal"
)

// Choosing between a delta and a full snapshot (docs/persistence.md,
// "Delta snapshots"). Every snapshot after the first full one is a delta
// (only what changed since the previous one, delta.go) unless
//
//   - the deltas since the full snapshot, this one included, would hold
//     more units and deleted keys than 1/deltaShare of the units of the
//     full snapshot. Restart time decides the share: a restart applies a
//     delta's units to heaps not yet in order (restore.go, state.loose:
//     a map lookup, an O(1) removal, an append; one heapify after the
//     last delta), about 2.4 us each at 10M units, five times a unit of
//     the full snapshot (decoded on one goroutine, cache misses), so
//     deltas holding a sixteenth of its units add about a third of its
//     load time (about 0.3 us since full snapshots are in heap order and
//     deltas decoded aside, on the quiet machine: docs/persistence.md
//     "Full snapshots in heap order, deltas decoded aside"; the share was
//     left as it was). The worst case
//     this allows at 10M units, with a 64 MiB journal tail, restarted in
//     8.5 s (10.3-10.4 s at an eighth):
//     docs/persistence.md, "Restart at 10M units",
//     BenchmarkRestartDeltas/limit+tail;
//   - maxDeltas deltas follow the full snapshot already (restart time:
//     each delta re-lists the specs, workers and groups whole);
//   - the previous snapshot failed, or none was taken or loaded since the
//     start (the changes it took would be missing from a delta), or
//     recovery dropped units whose blob was lost (the chain still holds
//     them).
//
// A delta's size follows what changed; a full snapshot's follows all the
// units, and supersedes the full snapshot and deltas before it.

// defaultMaxDeltas bounds the deltas after a full snapshot;
// defaultDeltaShare is the part (1/n) of its units they may hold.
const (
	defaultMaxDeltas  = 8
	defaultDeltaShare = 16
)

// wantDelta says whether the snapshot about to be taken, whose dirty
// units (changed, added or deleted since the last snapshot; an upper
// bound) number pending, is a delta.
func (w *wal) wantDelta(pending int) bool {
	return !w.needBase && w.deltas < w.maxDeltas && w.deltaShare*(w.deltaUnits+pending) <= w.baseUnits
}

// dirtyUnits counts the units and deleted keys the named namespaces
// tracked since the last snapshot; the caller holds their locks. O(specs).
func (b *Backend) dirtyUnits(names []string) int {
	n := 0
	for _, name := range names {
		for _, sp := range b.namespaces[name].st.specs {
			n += len(sp.dirty) + len(sp.gone)
		}
	}
	return n
}

// loadDelta applies a delta to the state recovery has built so far and,
// after the last delta, ends the loose restore (recovery only).
func (b *Backend) loadDelta(r io.Reader, info journal.SnapshotInfo) error {
	took := &b.wal.loadTimes
	t := time.Now()
	err := b.applyDelta(r, info)
	took.deltas += time.Since(t)
	if err != nil || info.Deltas > 0 {
		return err
	}
	// The chain is in: before the journal's records.
	t = time.Now()
	err = b.endChain()
	took.settled = time.Since(t)
	return err
}

// applyDelta applies a delta to the state recovery has built so far.
func (b *Backend) applyDelta(r io.Reader, info journal.SnapshotInfo) error {
	a := &deltaApplier{b: b}
	// Decoded on a goroutine of its own while the parts before are
	// applied, as a full snapshot is.
	err, derr := decodeAside(func(emit func(*snapPart) error) error {
		return decodeDelta(r, info.MaxBytes, b.wal.readBlob, loadBatch, emit)
	}, func(parts <-chan *snapPart) error {
		for p := range parts {
			if err := a.part(p); err != nil {
				return err
			}
		}
		return nil
	})
	switch {
	case err != nil:
	case derr != nil:
		err = derr
	case a.s != nil:
		err = errPartsEnded
	}
	if err != nil {
		return fmt.Errorf("memory: delta snapshot: %w", err)
	}
	if len(a.dropped) > 0 {
		b.wal.log.Error("recovery dropped work units whose data blob is missing or damaged",
			"units", len(a.dropped), "dropped", a.dropped)
		// They are still in this delta: the next snapshot must be full
		// (loadSnapshot).
		b.wal.needBase = true
	}
	if w := b.wal; w != nil {
		w.deltas++
		w.deltaUnits += a.units + a.deleted // as Snapshot counts them
	}
	return nil
}

// endChain ends the loose restore of every namespace once the last delta
// is in (state.endLooseRestore).
func (b *Backend) endChain() error {
	for name, ns := range b.namespaces {
		if err := ns.st.endLooseRestore(); err != nil {
			return fmt.Errorf("memory: delta snapshot: namespace %q: %w", name, err)
		}
	}
	return nil
}

// loadedSnapshot notes a full snapshot of units units loaded by recovery:
// the next snapshot may be a delta after it.
func (w *wal) loadedSnapshot(units int) {
	w.needBase, w.baseUnits, w.deltas, w.deltaUnits = false, units, 0, 0
}

// unitCount counts st's units.
func (st *state) unitCount() int {
	n := 0
	for _, sp := range st.specs {
		n += len(sp.units)
	}
	return n
}
