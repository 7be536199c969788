package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/fxamacker/cbor/v2"
)

// TestDeltaSnapshotModel drives journaled backends through random
// sequences of changes (randomWorkload's ops plus retries, large units
// whose data goes to the blob store, keys deleted and added again within
// one delta period, a namespace created after the first full snapshot)
// interleaved with full and delta snapshots, snapshots racing changes
// between their chunks, snapshots that fail, and restarts (clean and
// crash). After every snapshot its chain alone must give the state at its
// boundary; after every restart the state must be the live one before
// it; at the end a restarted copy must hand units out in the live order.
// The live backend is the model: every check compares against it.
//
// COORDINATE_DELTA_MODEL_SEEDS=n runs n seeds instead of a few (a longer
// search).
func TestDeltaSnapshotModel(t *testing.T) {
	seeds := 3
	if s := os.Getenv("COORDINATE_DELTA_MODEL_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("COORDINATE_DELTA_MODEL_SEEDS=%q: %v", s, err)
		}
		seeds = n
	}
	counted := map[string]int{}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runDeltaModel(t, seed, 40, counted) })
	}
	for _, c := range []string{"delta", "full", "raced", "failed", "clean restart", "crash restart"} {
		if counted[c] == 0 {
			t.Fatalf("no %s in the runs (%v): the seeds prove too little", c, counted)
		}
	}
}

// deltaModel is one run of TestDeltaSnapshotModel.
type deltaModel struct {
	t       *testing.T
	dir     string
	clock   *coordinate.FakeClock
	r       *rand.Rand
	b       *Backend
	names   []string // the namespaces the workload uses
	bigSeq  int      // makes every large unit's data new
	counted map[string]int
}

// runDeltaModel runs rounds rounds with seed, adding what it did to
// counted.
func runDeltaModel(t *testing.T, seed uint64, rounds int, counted map[string]int) {
	m := &deltaModel{t: t, dir: t.TempDir(), r: rand.New(rand.NewPCG(seed, 0xde17a)), names: []string{""}, counted: counted,
		clock: coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	m.b = openPersistent(t, m.dir, m.clock, 1<<40)
	defer func() { m.b.Close() }()
	for round := range rounds {
		if round == rounds/4 {
			m.names = append(m.names, "late") // after the first snapshots
		}
		for _, name := range m.names {
			m.work(nsOf(t, m.b, name), 5+m.r.IntN(25))
		}
		switch x := m.r.IntN(20); {
		case x < 11:
			m.snapshot(m.r.IntN(3) == 0, m.r.IntN(3) == 0)
		case x < 13:
			m.failedSnapshot()
		case x < 17:
			m.restart(m.r.IntN(2) == 0)
		}
	}
	m.snapshot(false, false)
	m.handOutOrder()
}

// work changes ns: randomWorkload, then ops it does not do.
func (m *deltaModel) work(ns *namespace, n int) {
	t, r, ctx := m.t, m.r, context.Background()
	randomWorkload(t, ns, m.clock, r, n)
	spec := []string{"a", "b", "c", "d"}[r.IntN(4)]
	key := func() string { return fmt.Sprintf("k%02d", r.IntN(40)) }
	keys := []string{key(), key(), key()}
	if _, err := ns.RetryWorkUnits(ctx, spec, keys); err != nil && !isExpected(err) {
		t.Fatal(err)
	}
	// A key deleted and added again within one delta period.
	if _, err := ns.DeleteWorkUnits(ctx, spec, coordinate.DeleteQuery{Keys: keys[:1]}); err != nil {
		t.Fatal(err)
	}
	in := []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: keys[0], Text: true}, Data: smallData}}
	if r.IntN(3) == 0 { // data large enough for the blob store
		m.bigSeq++
		big := bigData(blobThreshold+m.bigSeq, byte(m.bigSeq))
		in[0].Data = big
		if r.IntN(2) == 0 { // and an old large value kept alive by another key
			in = append(in, coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: "keep" + keys[1], Text: true}, Data: big})
		}
	}
	if err := ns.AddWorkUnits(ctx, spec, in); err != nil && !isExpected(err) {
		t.Fatal(err)
	}
	if r.IntN(3) == 0 { // a worker whose leases end when its record lapses (ownerdeath.go)
		w := coordinate.Name{Bytes: "mortal", Text: true}
		data, err := cbor.Marshal(map[string]any{coordinate.ReleaseLeasesKey: true})
		if err != nil {
			t.Fatal(err)
		}
		hb := coordinate.Heartbeat{Worker: w, Mode: smallData, Expire: time.Duration(1+r.IntN(20)) * time.Second, Data: data}
		if !coordinate.ReleasesLeasesOnExit(hb.Data) {
			t.Fatalf("heartbeat data %x does not ask for its leases' release", hb.Data)
		}
		if err := ns.WorkerHeartbeat(ctx, hb); err != nil {
			t.Fatal(err)
		}
		if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: w, LeaseTime: time.Minute, MaxJobs: 2}); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot takes a full snapshot or a delta (one if the chain allows),
// with changes racing its capture if raced, and checks that the chain on
// disk alone gives the state at its boundary.
func (m *deltaModel) snapshot(full, raced bool) {
	t, w := m.t, m.b.wal
	w.captureChunk = 1 + m.r.IntN(6)
	w.needBase = w.needBase || full
	w.maxDeltas, w.deltaShare = 1000, 0
	if raced {
		ns := nsOf(t, m.b, m.names[m.r.IntN(len(m.names))])
		r := rand.New(rand.NewPCG(m.r.Uint64(), 1))
		w.betweenChunks = func() { randomWorkload(t, ns, m.clock, r, 2) }
		defer func() { w.betweenChunks = nil }()
	}
	atBoundary := dumpAll(m.b) // nothing changes before the boundary
	st, err := m.b.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("snapshot (full %v, raced %v): %v", full, raced, err)
	}
	if full && st.Delta {
		t.Fatal("a delta after needBase")
	}
	m.count(map[bool]string{true: "delta", false: "full"}[st.Delta])
	if raced && st.Saved > 0 {
		m.count("raced")
	}
	if got := snapshotOnly(t, m.copyDir(), m.clock); got != atBoundary {
		t.Fatalf("the snapshot chain (last a delta: %v, raced %v) differs from the state at its boundary:\n%s", st.Delta, raced, dumpDiff(got, atBoundary))
	}
}

// failedSnapshot makes a snapshot fail (its large unit data cannot be
// written) after changes; the next snapshot must still hold them.
func (m *deltaModel) failedSnapshot() {
	t, w := m.t, m.b.wal
	ns := nsOf(t, m.b, m.names[m.r.IntN(len(m.names))])
	m.work(ns, 3)
	m.bigSeq++
	big := bigData(blobThreshold+m.bigSeq, byte(m.bigSeq))
	if err := ns.AddWorkUnits(context.Background(), "a", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "doomed", Text: true}, Data: big}}); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := w.blobs.dir
	w.blobs.dir = filepath.Join(blocker, "blobs")
	if m.r.IntN(2) == 0 {
		w.needBase = true
	}
	_, err := m.b.Snapshot(context.Background())
	w.blobs.dir = dir
	if err == nil {
		t.Fatal("a snapshot whose blob cannot be written succeeded")
	}
	m.count("failed")
	m.work(ns, 3)
	m.snapshot(false, false)
}

// restart closes the backend (cleanly, or as a crash) and opens it again:
// the state must be the one before.
func (m *deltaModel) restart(clean bool) {
	t := m.t
	want := dumpAll(m.b)
	if clean {
		if err := m.b.Close(); err != nil {
			t.Fatal(err)
		}
		m.count("clean restart")
	} else {
		crash(t, m.b)
		m.count("crash restart")
	}
	m.b = openPersistent(t, m.dir, m.clock, 1<<40)
	for _, ns := range m.b.namespaces {
		checkInvariants(t, ns.st)
	}
	if got := dumpAll(m.b); got != want {
		t.Fatalf("after a restart (clean %v) the state differs from the live one before it:\n%s", clean, dumpDiff(got, want))
	}
}

// handOutOrder restarts a copy of the directory and checks that it hands
// every spec's units out in the live backend's order.
func (m *deltaModel) handOutOrder() {
	t, ctx := m.t, context.Background()
	c := openPersistent(t, m.copyDir(), m.clock, 1<<40)
	defer crash(t, c)
	m.clock.Add(24 * time.Hour) // every lease and delay lapses
	worker := coordinate.Name{Bytes: "drain", Text: true}
	drain := func(ns *namespace, spec string) string {
		var keys []string
		for range 1000 {
			as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, LeaseTime: time.Hour, MaxJobs: 1, WorkSpecs: []string{spec}})
			if err != nil || len(as) == 0 {
				keys = append(keys, fmt.Sprint("end: ", err))
				break
			}
			keys = append(keys, as[0].Key.Bytes)
		}
		return strings.Join(keys, " ")
	}
	handed := 0
	for _, name := range m.names {
		live, restored := nsOf(t, m.b, name), nsOf(t, c, name)
		for _, spec := range sortedSpecNames(live.st.specs) {
			want, got := drain(live, spec), drain(restored, spec)
			if got != want {
				t.Fatalf("namespace %q spec %q: restored hands out %s, live %s", name, spec, got, want)
			}
			handed += strings.Count(want, " ")
		}
	}
	if handed == 0 {
		t.Fatal("no unit handed out: the order check proves nothing")
	}
}

func (m *deltaModel) count(what string) { m.counted[what]++ }

// copyDir flushes the journal and copies the data directory.
func (m *deltaModel) copyDir() string {
	if err := m.b.wal.j.Flush(context.Background()); err != nil {
		m.t.Fatal(err)
	}
	copied := m.t.TempDir()
	if err := os.CopyFS(copied, os.DirFS(m.dir)); err != nil {
		m.t.Fatal(err)
	}
	return copied
}

// dumpDiff shows where two dumps first differ.
func dumpDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	i := firstDiff(g, w)
	line := func(l []string) string {
		if i < len(l) {
			return l[i]
		}
		return "(end)"
	}
	return fmt.Sprintf("line %d:\n  got  %s\n  want %s", i+1, line(g), line(w))
}
