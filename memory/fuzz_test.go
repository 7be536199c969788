package memory

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/coordinated/coordinated/coordinate"
)

// Fuzz targets (docs/persistence.md, "Recovery"). scripts/test.sh runs
// each for a few seconds, `make fuzz` for longer; with plain `go test`
// they run their seeds.

// FuzzSnapshotLoad: any bytes, read as a snapshot and restored, give a
// state or an error: no panic, no allocation beyond what the bytes can
// describe. (A restored state may still break rules that only the ops
// keep, such as a finished unit keeping its lease id: checksums make such
// contents the product of a bug, not of a crash.)
func FuzzSnapshotLoad(f *testing.F) {
	golden, err := os.ReadFile(filepath.FromSlash(goldenSnapshot))
	if err != nil {
		f.Fatal(err)
	}
	v1, err := os.ReadFile(filepath.FromSlash(goldenSnapshotV1))
	if err != nil {
		f.Fatal(err)
	}
	store, _, _ := goldenBlobs(f)
	f.Add(golden)
	f.Add(v1)
	f.Add([]byte("CDMS\x01\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Recovery's pipelined load, in small batches: an error or states,
		// never a panic or a hang; states only where the sequential load
		// gives them too.
		built := 0
		perr := loadParallel(bytes.NewReader(b), int64(len(b)), store.read, 3, false, func(string, *state, []coordinate.UnitRef) error {
			built++
			return nil
		})
		nss, err := readSnapshot(bytes.NewReader(b), int64(len(b)), store.read)
		if err != nil {
			if perr == nil {
				t.Fatalf("pipelined load accepted what readSnapshot refuses: %v", err)
			}
			return
		}
		ok := 0
		for _, c := range nss {
			if _, err := c.restore(); err == nil {
				ok++
			}
		}
		if perr == nil && (ok != len(nss) || built != len(nss)) {
			t.Fatalf("pipelined load built %d namespaces; sequential: %d of %d", built, ok, len(nss))
		}
		if perr != nil && ok == len(nss) {
			t.Fatalf("pipelined load failed (%v) where the sequential one did not", perr)
		}
	})
}

// FuzzRecordApply: any bytes, decoded as a record of either format and
// applied to the golden state through the replay path, give an error or
// a change: applyRecord turns a record that does not fit the state into
// an error, and nothing may allocate beyond what the bytes describe.
func FuzzRecordApply(f *testing.F) {
	for _, g := range goldenRecords() {
		for _, format := range []string{"v1", "v2"} {
			if format == "v1" && addedInFormat2[g.name] {
				continue
			}
			rec, err := os.ReadFile(goldenPath(format, g.name))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(rec, format == "v1")
		}
	}
	f.Fuzz(func(t *testing.T, rec []byte, v1 bool) {
		b := New(Options{})
		b.namespaces["ns"] = goldenState(t)
		format := uint32(recordFormat)
		if v1 {
			format = 0
		}
		b.applyRecord(rec, format)
	})
}

// FuzzDeltaLoad: any bytes, read as a delta snapshot (delta.go) and
// applied to the state of the golden full snapshot, give a state or an
// error: no panic, no allocation beyond what the bytes can describe.
func FuzzDeltaLoad(f *testing.F) {
	delta, err := os.ReadFile(filepath.FromSlash(goldenDelta))
	if err != nil {
		f.Fatal(err)
	}
	store, _, _ := goldenBlobs(f)
	f.Add(delta)
	f.Add([]byte("CDMD\x01\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		be, _ := goldenBase(t, store)
		decodeDelta(bytes.NewReader(b), int64(len(b)), store.read, 3, (&deltaApplier{b: be}).part)
	})
}
