package memory

import (
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

func TestAgeQueue(t *testing.T) {
	var q ageQueue
	if _, ok := q.oldest(); ok {
		t.Fatal("empty queue has an oldest second")
	}
	q.add(10)
	q.add(10)
	q.add(12)
	q.add(11) // the clock went back
	q.remove(10)
	if s, _ := q.oldest(); s != 10 {
		t.Errorf("oldest = %d, want 10 (one unit left)", s)
	}
	q.remove(10)
	if s, _ := q.oldest(); s != 11 {
		t.Errorf("oldest = %d, want 11", s)
	}
	q.remove(99) // never counted: ignored
	q.remove(12)
	q.remove(11)
	if _, ok := q.oldest(); ok || len(q.buckets) != 0 {
		t.Errorf("queue not empty after removing everything: %+v", q)
	}
}

// The memory backend keeps what the conformance suite lets a backend
// leave out: transition counters and the oldest unit's age.
func TestStatsTracked(t *testing.T) {
	clock := coordinate.NewFakeClock(time.Unix(1_000_000, 0))
	b := New(Options{Clock: clock})
	ctx := t.Context()
	ns, _ := b.Namespace(ctx, "")
	defineSpec(t, ctx, ns, "s")
	if err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "a"}, Data: coordinate.EmptyMap}}); err != nil {
		t.Fatal(err)
	}
	clock.Add(5 * time.Second)
	st, err := ns.(coordinate.StatsReader).Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Specs[0]
	if s.Events == nil || s.Events.Added != 1 {
		t.Errorf("events = %+v, want 1 added", s.Events)
	}
	if want := time.Unix(1_000_000, 0); !s.OldestAvailable.Equal(want) {
		t.Errorf("oldest available = %v, want %v", s.OldestAvailable, want)
	}
}

func TestStatsResetAfterRecovery(t *testing.T) {
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Unix(1_000_000, 0))
	ctx := t.Context()
	b, err := Open(ctx, Options{Clock: clock, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := b.Namespace(ctx, "")
	defineSpec(t, ctx, ns, "s")
	if err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "a"}, Data: coordinate.EmptyMap}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Minute)
	b, err = Open(ctx, Options{Clock: clock, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ns, _ = b.Namespace(ctx, "")
	st, err := ns.(coordinate.StatsReader).Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Specs[0]
	if *s.Events != (coordinate.SpecEvents{}) {
		t.Errorf("events after recovery = %+v, want none (replay is not new work)", *s.Events)
	}
	if want := clock.Now().Truncate(time.Second); !s.OldestAvailable.Equal(want) || s.Counts[coordinate.StatusAvailable] != 1 {
		t.Errorf("after recovery: oldest available %v (want %v), counts %v", s.OldestAvailable, want, s.Counts)
	}
	if b.SnapshotSeconds().Snapshot().Count != 0 {
		t.Errorf("snapshots counted before any was taken in this process")
	}
}
