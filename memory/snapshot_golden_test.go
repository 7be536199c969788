package memory

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/fxamacker/cbor/v2"
)

const (
	goldenSnapshot   = "testdata/snapshot-v4.bin"
	goldenSnapshotV3 = "testdata/snapshot-v3.bin"
	goldenSnapshotV2 = "testdata/snapshot-v2.bin"
	goldenSnapshotV1 = "testdata/snapshot-v1.bin"
)

// goldenState builds a small state by applying ops with fixed times: an
// available, a delayed, a leased and a finished unit, a group, a
// dependency, a worker with a parent holding the lease.
func goldenState(t testing.TB) *namespace {
	t.Helper()
	// Deterministic encoding: map keys in a fixed order, or the golden
	// bytes would depend on Go's map iteration order.
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		t.Fatal(err)
	}
	def, err := em.Marshal(map[string]any{"name": "s", "max_retries": 3})
	if err != nil {
		t.Fatal(err)
	}
	const t0 = int64(1_700_000_000_000_000_000)
	p := 2.0
	w := coordinate.Name{Bytes: "w1", Text: true}
	ns := newNamespace("ns", Options{})
	for _, o := range []op{
		&opSetWorkSpec{Definition: def},
		&opAddWorkUnits{Spec: "s", Now: t0, Units: []coordinate.WorkUnitInput{
			{Key: coordinate.Name{Bytes: "a", Text: true}, Data: coordinate.EmptyMap, Priority: &p, Group: "g"},
			{Key: coordinate.Name{Bytes: "b"}, Data: coordinate.EmptyMap},
			{Key: coordinate.Name{Bytes: "c", Text: true}, Data: coordinate.EmptyMap, Delay: time.Hour},
			{Key: coordinate.Name{Bytes: "d", Text: true}, Data: coordinate.EmptyMap, Group: "g",
				DependsOn: []coordinate.UnitRef{{Spec: "s", Key: "b"}}},
		}},
		&opHeartbeat{Now: t0 + 1, Heartbeat: coordinate.Heartbeat{Worker: w, Mode: []byte{0xf6}, Data: coordinate.EmptyMap,
			Parent: &coordinate.Name{Bytes: "parent"}, Expire: 10 * time.Minute}},
		&opGetWork{Now: t0 + 2, Worker: w, Lease: 5 * time.Minute, Spec: "s", Count: 1},
		&opUpdateWorkUnit{Spec: "s", Key: "b", Now: t0 + 3, Update: coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}},
	} {
		o.apply(ns.st)
	}
	return ns
}

// goldenBigData is the data of the golden snapshot's blob unit.
func goldenBigData() []byte { return bigData(70_000, 0) }

// bigData is unit data of about n bytes: a CBOR map {"x": n bytes of a
// pattern that seed varies}.
func bigData(n int, seed byte) []byte {
	b := []byte{0xa1, 0x61, 'x', 0x5a, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[4:], uint32(n))
	for i := range n {
		b = append(b, byte(i*7)+seed)
	}
	return b
}

// goldenStateV2 is goldenState plus a unit "big" whose data goes to the
// blob store.
func goldenStateV2(t testing.TB) *namespace {
	ns := goldenState(t)
	(&opAddWorkUnits{Spec: "s", Now: 1_700_000_000_000_000_010, Units: []coordinate.WorkUnitInput{
		{Key: coordinate.Name{Bytes: "big", Text: true}, Data: goldenBigData()},
	}}).apply(ns.st)
	return ns
}

// goldenStateV3 is goldenStateV2 with settings set by control_work_spec
// (WorkSpecMeta.Controlled) and a second lease of worker w1 that lapsed
// (workerRegistry.lapse).
func goldenStateV3(t testing.TB) *namespace {
	ns := goldenStateV2(t)
	const t1 = int64(1_700_000_000_000_000_100)
	wt, iv := 7, time.Minute
	w := coordinate.Name{Bytes: "w1", Text: true}
	for _, o := range []op{
		&opControlWorkSpec{Spec: "s", Control: coordinate.WorkSpecControl{Weight: &wt, Interval: &iv}},
		&opGetWork{Now: t1, Worker: w, Lease: time.Second, Spec: "s", Count: 1, Keys: []string{"big"}},
		&opExpire{Now: t1 + int64(2*time.Second)},
	} {
		o.apply(ns.st)
	}
	if ns.st.specs["s"].meta.Controlled == 0 {
		t.Fatal("the golden state has no settings set by control")
	}
	if lapsed := ns.st.workers.byID["w1"].outstanding[ns.st.specs["s"].units["big"]]; lapsed != t1+int64(time.Second) {
		t.Fatalf("the golden state's lapsed lease: %d", lapsed)
	}
	return ns
}

// goldenBlobs returns a blob store in a temporary directory holding the
// golden snapshot's blob, and its references.
func goldenBlobs(t testing.TB) (*blobStore, map[dataKey]blobHash, *capturedNamespace) {
	t.Helper()
	c := captureSorted(goldenStateV3(t))
	store := newBlobStore(t.TempDir(), quietLogger())
	refs, err := store.prepare([]*capturedNamespace{c})
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 {
		t.Fatalf("%d blobs for the golden state, want 1", len(refs))
	}
	return store, refs, c
}

// captureSorted captures ns with each spec's units in key order (capture
// follows map order), so the bytes are reproducible.
func captureSorted(ns *namespace) *capturedNamespace {
	c := captureNamespace(ns)
	units := c.units
	for _, sp := range c.specs {
		slices.SortFunc(units[:sp.units], func(a, b unit) int { return strings.Compare(a.key, b.key) })
		units = units[sp.units:]
	}
	return c
}

// TestSnapshotGolden pins the snapshot encoding: the golden state encodes
// to the golden bytes (its big unit as a blob reference), and the golden
// bytes restore to the same state.
func TestSnapshotGolden(t *testing.T) {
	ns := goldenStateV3(t)
	store, refs, c := goldenBlobs(t)
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, []*capturedNamespace{c}, refs); err != nil {
		t.Fatal(err)
	}
	if *updateGolden {
		writeGolden(t, goldenSnapshot, buf.Bytes())
	}
	want, err := os.ReadFile(filepath.FromSlash(goldenSnapshot))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("snapshot bytes changed (a format change needs a new version and a reader for this one):\n got %x\nwant %x", buf.Bytes(), want)
	}
	if len(want) > blobThreshold {
		t.Fatalf("golden snapshot of %d bytes: the big unit's data is inline", len(want))
	}
	st := checkGoldenRestores(t, goldenSnapshot, want, store.read, ns)
	if !bytes.Equal(st.specs["s"].units["big"].data, goldenBigData()) {
		t.Fatal("the big unit's data did not come back from its blob")
	}
	// Without the blob store a reference is an error.
	if _, err := readSnapshot(bytes.NewReader(want), int64(len(want)), nil); err == nil || !strings.Contains(err.Error(), `unit "big"`) {
		t.Fatalf("reading a blob reference without a store: %v", err)
	}
}

// TestSnapshotGoldenV3 reads a version 3 snapshot (heap positions
// stored), so data directories written before version 4 still load.
func TestSnapshotGoldenV3(t *testing.T) {
	store, _, _ := goldenBlobs(t)
	checkOldGolden(t, goldenSnapshotV3, store.read, goldenStateV3(t))
}

// TestSnapshotGoldenV2 reads a version 2 snapshot (no settings marked as
// set by control_work_spec), so data directories written before them
// still load.
func TestSnapshotGoldenV2(t *testing.T) {
	store, _, _ := goldenBlobs(t)
	checkOldGolden(t, goldenSnapshotV2, store.read, goldenStateV2(t))
}

// TestSnapshotGoldenV1 reads a version 1 snapshot (all data inline), so
// data directories written before blobs still load.
func TestSnapshotGoldenV1(t *testing.T) {
	checkOldGolden(t, goldenSnapshotV1, nil, goldenState(t))
}

// checkOldGolden reads the golden snapshot of an older version and checks
// that it restores to want.
func checkOldGolden(t *testing.T, path string, blob blobReader, want *namespace) {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	checkGoldenRestores(t, path, b, blob, want)
}

// checkGoldenRestores checks that snap, the bytes of the golden snapshot
// path, restores to want (a valid state), and returns the restored state.
func checkGoldenRestores(t *testing.T, path string, snap []byte, blob blobReader, want *namespace) *state {
	t.Helper()
	got, err := readSnapshot(bytes.NewReader(snap), int64(len(snap)), blob)
	if err != nil {
		t.Fatal(err)
	}
	st, err := got[0].restore()
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, st)
	if a, b := dump(st), dump(want.st); a != b {
		t.Fatalf("%s restores to\n%s\nwant\n%s", path, a, b)
	}
	return st
}

// Damaged contents behind valid checksums are errors, never a crash or a
// huge allocation.
func TestSnapshotDamagedContentsAreErrors(t *testing.T) {
	golden, err := os.ReadFile(filepath.FromSlash(goldenSnapshot))
	if err != nil {
		t.Fatal(err)
	}
	store, _, _ := goldenBlobs(t)
	load := func(b []byte) error {
		nss, err := readSnapshot(bytes.NewReader(b), int64(len(b)), store.read)
		if err != nil {
			return err
		}
		for _, c := range nss {
			if _, err := c.restore(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := load(golden); err != nil {
		t.Fatal(err)
	}
	// The namespace count (byte 5, after "CDMS" and the version) set to 2^39.
	huge := append([]byte(nil), golden[:5]...)
	huge = append(huge, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10)
	huge = append(huge, golden[6:]...)
	if err := load(huge); err == nil || !strings.Contains(err.Error(), "cannot fit") {
		t.Errorf("namespace count 2^39: %v, want a count error", err)
	}
	// Every single-byte change: an error or a state, never a panic.
	for i := range golden {
		for _, x := range []byte{0x01, 0x7f, 0xff} {
			b := append([]byte(nil), golden...)
			b[i] ^= x
			load(b)
		}
	}
	// A status that does not fit the unit's heap: the leased unit's
	// encoding is the only "status 2, heap 3" pair; claim heap 1.
	pair := []byte{byte(coordinate.StatusPending), inPending}
	idx := bytes.Index(golden, pair)
	if idx < 0 || bytes.Count(golden, pair) != 1 {
		t.Fatal("leased unit not found once in the golden snapshot")
	}
	b := append([]byte(nil), golden...)
	b[idx+1] = inAvailable
	if err := load(b); err == nil || !strings.Contains(err.Error(), "does not fit heap") {
		t.Errorf("status not fitting its heap: %v, want a heap error", err)
	}
}

const goldenDelta = "testdata/delta-v1.bin"

// goldenDeltaState is goldenStateV3 taken in a full snapshot (that of
// snapshot-v4.bin), then changed: unit "b" deleted and added again with
// other data, "c" deleted, "e" added, "a" leased by a second worker (a
// heartbeat and a lease, so workers and the next lease id change), and a
// new spec "t" with one unit.
func goldenDeltaState(t testing.TB) (*namespace, *capture) {
	ns := goldenStateV3(t)
	ns.st.track = true
	captureNamespace(ns)
	const t2 = int64(1_700_000_000_000_001_000)
	w2 := coordinate.Name{Bytes: "w2", Text: true}
	for _, o := range []op{
		&opDeleteWorkUnits{Spec: "s", Now: t2, Query: coordinate.DeleteQuery{Keys: []string{"b", "c"}}},
		&opAddWorkUnits{Spec: "s", Now: t2 + 1, Units: []coordinate.WorkUnitInput{
			{Key: coordinate.Name{Bytes: "b"}, Data: coordinate.Null},
			{Key: coordinate.Name{Bytes: "e", Text: true}, Data: coordinate.EmptyMap},
		}},
		&opHeartbeat{Now: t2 + 2, Heartbeat: coordinate.Heartbeat{Worker: w2, Mode: []byte{0xf6}, Data: coordinate.EmptyMap, Expire: time.Minute}},
		&opGetWork{Now: t2 + 3, Worker: w2, Lease: time.Minute, Spec: "s", Count: 1, Keys: []string{"a"}},
		&opSetWorkSpec{Definition: coordinate.Data{0xa1, 0x64, 'n', 'a', 'm', 'e', 0x61, 't'}},
		&opAddWorkUnits{Spec: "t", Now: t2 + 4, Units: []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "x", Text: true}, Data: coordinate.EmptyMap}}},
	} {
		o.apply(ns.st)
	}
	return ns, beginCapture(ns, captureChunk, true)
}

// TestDeltaGolden pins the delta encoding (delta.go): the golden delta
// state encodes to the golden bytes, and the golden full snapshot plus the
// golden delta restore to the changed state.
func TestDeltaGolden(t *testing.T) {
	ns, c := goldenDeltaState(t)
	store, _, _ := goldenBlobs(t)
	var buf bytes.Buffer
	units, gone, err := writeDeltaCaptures(&buf, []*capture{c}, store.batch(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if units != 4 || gone != 2 {
		t.Fatalf("delta of %d units and %d deleted keys, want 4 (a, b, e, x) and 2 (b, c)", units, gone)
	}
	if *updateGolden {
		writeGolden(t, goldenDelta, buf.Bytes())
	}
	want, err := os.ReadFile(filepath.FromSlash(goldenDelta))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("delta bytes changed (a format change needs a new version and a reader for this one):\n got %x\nwant %x", buf.Bytes(), want)
	}
	b, st := goldenBase(t, store)
	a := &deltaApplier{b: b}
	if err := decodeDelta(bytes.NewReader(want), int64(len(want)), store.read, 2, a.part); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, st)
	if got, w := dump(st), dump(ns.st); got != w {
		t.Fatalf("golden snapshot and delta restore to\n%s\nwant\n%s", got, w)
	}
}

// goldenBase returns a backend holding the golden full snapshot's state
// (namespace "ns"), the base the golden delta applies to, and that state.
func goldenBase(t testing.TB, store *blobStore) (*Backend, *state) {
	t.Helper()
	base, err := os.ReadFile(filepath.FromSlash(goldenSnapshot))
	if err != nil {
		t.Fatal(err)
	}
	nss, err := readSnapshot(bytes.NewReader(base), int64(len(base)), store.read)
	if err != nil {
		t.Fatal(err)
	}
	st, err := nss[0].restore()
	if err != nil {
		t.Fatal(err)
	}
	b := New(Options{})
	b.replayNamespace("ns").st = st
	return b, st
}
