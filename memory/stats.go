package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/histo"
)

// Monitoring: the counts behind coordinate.StatsReader, kept as units
// move (state.place) so that a /metrics scrape costs O(work specs).

var (
	_ coordinate.StatsReader      = (*namespace)(nil)
	_ coordinate.GroupLister      = (*namespace)(nil)
	_ coordinate.WorkerUnitLister = (*namespace)(nil)
)

// unixSecond is the Unix second of a Unix-nanosecond time, as units keep it.
func unixSecond(ns int64) uint32 { return uint32(max(ns, 0) / int64(time.Second)) }

// ageQueue counts a spec's runnable AVAILABLE units by the second they
// became so, oldest first, so the oldest one's age is read in O(1). A
// unit's second is kept in unit.since; buckets emptied in the middle stay
// until they reach the front, so the queue holds at most one bucket per
// second between the oldest and the newest such unit.
type ageQueue struct {
	buckets []ageBucket
	head    int // buckets[:head] are spent
}

type ageBucket struct {
	sec uint32
	n   int32
}

func (q *ageQueue) add(sec uint32) {
	live := q.buckets[q.head:]
	if n := len(live); n > 0 && live[n-1].sec == sec {
		live[n-1].n++
		return
	}
	if n := len(live); n == 0 || live[n-1].sec < sec {
		q.buckets = append(q.buckets, ageBucket{sec, 1})
		return
	}
	// The clock went back (a test clock, or a step of the wall clock).
	i, found := q.find(sec)
	if found {
		q.buckets[i].n++
		return
	}
	q.buckets = slices.Insert(q.buckets, i, ageBucket{sec, 1})
}

// remove forgets one unit of second sec. A second it never counted (units
// restored from a snapshot before rebuildStats) is ignored.
func (q *ageQueue) remove(sec uint32) {
	i, found := q.find(sec)
	if !found || q.buckets[i].n == 0 {
		return
	}
	q.buckets[i].n--
	for q.head < len(q.buckets) && q.buckets[q.head].n == 0 {
		q.head++
	}
	if q.head == len(q.buckets) {
		q.buckets, q.head = q.buckets[:0], 0
	} else if q.head > 64 && q.head > len(q.buckets)/2 {
		q.buckets = append(q.buckets[:0], q.buckets[q.head:]...)
		q.head = 0
	}
}

func (q *ageQueue) find(sec uint32) (int, bool) {
	live := q.buckets[q.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].sec >= sec })
	return q.head + i, i < len(live) && live[i].sec == sec
}

// oldest returns the second of the oldest unit counted.
func (q *ageQueue) oldest() (uint32, bool) {
	if q.head == len(q.buckets) {
		return 0, false
	}
	return q.buckets[q.head].sec, true
}

// Stats implements coordinate.StatsReader.
func (ns *namespace) Stats(ctx context.Context) (_ *coordinate.NamespaceStats, err error) {
	if _, err := ns.begin(ctx); err != nil {
		return nil, err
	}
	defer ns.end(ctx, &err)
	out := &coordinate.NamespaceStats{Specs: make([]coordinate.SpecStats, 0, len(ns.st.specs))}
	for _, name := range sortedSpecNames(ns.st.specs) {
		sp := ns.st.specs[name]
		st := coordinate.SpecStats{Name: sp.name, Paused: sp.meta.Paused, Continuous: sp.meta.Continuous}
		for s := coordinate.StatusAvailable; s <= coordinate.StatusFailed; s++ {
			st.Counts[s] = sp.counts[s] + sp.archived[s]
		}
		if sec, ok := sp.ages.oldest(); ok {
			st.OldestAvailable = time.Unix(int64(sec), 0)
		}
		ev := sp.events
		st.Events = &ev
		out.Specs = append(out.Specs, st)
	}
	return out, nil
}

// GroupUnits implements coordinate.GroupLister.
func (ns *namespace) GroupUnits(ctx context.Context, name string, limit int) (_ []*coordinate.WorkUnit, more bool, err error) {
	if _, err := ns.begin(ctx); err != nil {
		return nil, false, err
	}
	defer ns.end(ctx, &err)
	gr := ns.st.groups[name]
	if gr == nil {
		return nil, false, nil
	}
	members := make([]*unit, 0, len(gr.members))
	for u := range gr.members {
		members = append(members, u)
	}
	slices.SortFunc(members, func(a, b *unit) int {
		if a.spec.name.Bytes != b.spec.name.Bytes {
			return strings.Compare(a.spec.name.Bytes, b.spec.name.Bytes)
		}
		return strings.Compare(a.key, b.key)
	})
	if limit > 0 && len(members) > limit {
		members, more = members[:limit], true
	}
	out := make([]*coordinate.WorkUnit, len(members))
	for i, u := range members {
		out[i] = unitView(u)
	}
	return out, more, nil
}

// WorkerUnits implements coordinate.WorkerUnitLister.
func (ns *namespace) WorkerUnits(ctx context.Context, id string) (_ []coordinate.ChildWorkUnit, err error) {
	if _, err := ns.begin(ctx); err != nil {
		return nil, err
	}
	defer ns.end(ctx, &err)
	w := ns.st.workers.byID[id]
	if w == nil {
		return nil, fmt.Errorf("%w %q", coordinate.ErrNoSuchWorker, id)
	}
	return outstandingUnits(w), nil
}

// outstandingUnits lists the units handed to w that are not yet FINISHED
// or FAILED, ordered by spec and key.
func outstandingUnits(w *worker) []coordinate.ChildWorkUnit {
	units := make([]*unit, 0, len(w.outstanding))
	for u := range w.outstanding {
		units = append(units, u)
	}
	sortUnitsByRef(units)
	out := make([]coordinate.ChildWorkUnit, len(units))
	for i, u := range units {
		cu := coordinate.ChildWorkUnit{
			Spec:   u.spec.name,
			Key:    u.keyName(),
			Data:   slices.Clone(u.data),
			Worker: u.workerName(),
		}
		switch lapsed := w.outstanding[u]; {
		case u.status == coordinate.StatusPending:
			cu.Expires = timeOf(u.expiration)
		case u.workerKind == noWorker && lapsed != 0:
			cu.Expires = timeOf(lapsed) // nobody holds it: w's lease lapsed then
		}
		out[i] = cu
	}
	return out
}

// resetStats starts the monitoring counts afresh after recovery: replayed
// transitions are not counted as new ones, and units AVAILABLE then count
// as available since now (a snapshot does not keep that second).
func (b *Backend) resetStats() {
	now := unixSecond(b.opts.Clock.Now().UnixNano())
	for _, ns := range b.namespaces {
		for _, sp := range ns.st.specs {
			sp.events = coordinate.SpecEvents{}
			sp.ages = ageQueue{}
			// The available heap holds exactly the units with where ==
			// inAvailable: walking its slice is much cheaper than the map.
			for i := range sp.available.items {
				sp.available.items[i].u.since = now
			}
			if n := len(sp.available.items); n > 0 {
				sp.ages.buckets = []ageBucket{{sec: now, n: int32(n)}}
			}
		}
	}
}

// newSnapshotHistogram has buckets from 10 ms to about 80 s.
func newSnapshotHistogram() *histo.Histogram { return histo.Exponential(0.01, 2, 14) }

// SnapshotSeconds returns the distribution of snapshot durations (the
// pause plus the write) since Open; nil for a volatile backend.
func (b *Backend) SnapshotSeconds() *histo.Histogram {
	if b.wal == nil {
		return nil
	}
	return b.wal.snapshots
}
