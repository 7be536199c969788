package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/histo"
	"github.com/coordinated/coordinated/internal/replyhold"
	"github.com/coordinated/coordinated/journal"
)

// DefaultSnapshotBytes is how much journal may accumulate after the last
// snapshot before a new one is taken in the background.
const DefaultSnapshotBytes = 64 << 20

type journalTicket = journal.Ticket

// failedTicket marks a record that could not be encoded: waiting on it
// reports wal.failed. It differs from the ticket the journal hands out
// after Close (MaxUint64), which reports journal.ErrClosed; real tickets
// never come near either.
const failedTicket = journalTicket(math.MaxUint64 - 1)

// wal connects a persistent backend to its journal: namespaces append
// records through it, and it takes snapshots when the journal has grown.
type wal struct {
	j *journal.Journal
	// holdReplies: under SyncGroup an update that allows it hands its wait
	// to the flusher (waitOrHold, internal/replyhold). Under the other policies
	// a round costs no sync, and the flusher writing every reply made it
	// the bottleneck (docs/persistence.md, "Group commit, seventh pass").
	holdReplies   bool
	blobs         *blobStore // large unit data of snapshots (blobs.go)
	recover       bool       // -recover: drop units whose blob is lost
	log           *slog.Logger
	snapshotBytes int64
	captureChunk  int // units copied per lock hold by a snapshot (cow.go)
	// betweenChunks, if set (tests), runs between two lock holds of a
	// snapshot's copying, with the namespace unlocked.
	betweenChunks func()
	// loadTimes: how long recovery took to apply the deltas and to end
	// the loose restore after them (loadDelta), for Open's log.
	loadTimes struct{ deltas, settled time.Duration }

	sinceSnapshot atomic.Int64 // record bytes appended since the last rotation
	failed        atomic.Pointer[error]
	failedOnce    sync.Once
	failedCh      chan struct{} // closed at the first journal failure

	kick chan struct{} // asks the snapshot loop for a snapshot (capacity 1)

	// The chain of snapshots on disk, for choosing between a delta and a
	// full snapshot (Backend.Snapshot; guarded by Backend.snapMu):
	// needBase until a full snapshot is on disk and every change since is
	// in deltas; baseUnits the units of the full snapshot, deltas and
	// deltaUnits the deltas after it and the units and deleted keys they
	// hold.
	needBase              bool
	baseUnits, deltaUnits int
	deltas                int
	maxDeltas             int // at most this many deltas after a full snapshot
	deltaShare            int // holding at most 1/deltaShare of its units

	snapshots *histo.Histogram // durations, for metrics (stats.go)
	stop      chan struct{}
	done      chan struct{}
}

// append encodes op o of namespace ns (nil: the namespace's creation) with
// enc and appends it. The caller holds the lock that orders ns's changes.
func (w *wal) append(enc *recordEncoder, ns string, o op) journalTicket {
	rec, err := enc.encode(ns, o)
	if err == nil && len(rec) > journal.MaxRecordSize {
		err = fmt.Errorf("record of %d bytes exceeds the journal's limit of %d", len(rec), journal.MaxRecordSize)
	}
	if err != nil {
		// The change is applied in memory but cannot be journaled: stop
		// acknowledging anything, a restart recovers what is on disk.
		err = fmt.Errorf("memory: change not journaled, restart the daemon: %w", err)
		w.failed.CompareAndSwap(nil, &err)
		w.log.Error("journal record could not be written", "err", err)
		w.j.Fail(err) // nothing after it is written, no snapshot holds it
		w.fail()
		return failedTicket
	}
	t := w.j.Append(rec)
	enc.release()
	if w.sinceSnapshot.Add(int64(len(rec))) > w.snapshotBytes {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return t
}

// wait returns once the record of ticket t is durable.
func (w *wal) wait(ctx context.Context, t journalTicket) error {
	return w.await(ctx, t, false)
}

// waitOrHold is wait for a call that succeeded: when the request allows
// it, its reply waits for the record instead of the caller
// (internal/replyhold), and waitOrHold returns nil at once. Only a call
// that succeeded may hand over its wait: the reply is then built from the
// journal's outcome alone.
func (w *wal) waitOrHold(ctx context.Context, t journalTicket) error {
	return w.await(ctx, t, w.holdReplies)
}

func (w *wal) await(ctx context.Context, t journalTicket, mayHold bool) error {
	if p := w.failed.Load(); p != nil {
		return *p
	}
	if t == failedTicket {
		return errors.New("memory: change not journaled")
	}
	if mayHold && replyhold.Defer(ctx, func(done func(error)) { w.j.Notify(t, w.noticed(done)) }) {
		return nil // the reply waits instead (internal/replyhold)
	}
	if err := w.j.Wait(ctx, t); err != nil {
		return w.journalError(err, ctx.Err() != nil)
	}
	return nil
}

// noticed wraps the callback of a held reply: the journal's outcome is
// reported as wait reports it.
func (w *wal) noticed(done func(error)) func(error) {
	return func(err error) {
		if err != nil {
			err = w.journalError(err, false)
		}
		done(err)
	}
}

// journalError is the error of a change whose record the journal did not
// make durable. A write failure (not a closed journal, not a caller that
// gave up waiting) fails the backend: nothing more is acknowledged.
func (w *wal) journalError(err error, gaveUp bool) error {
	if !gaveUp && !errors.Is(err, journal.ErrClosed) {
		w.fail()
	}
	return fmt.Errorf("memory: journal: %w", err)
}

// check returns the journal's failure, if one is already known, without
// waiting: for a change answered before its record is durable (GetWork).
func (w *wal) check(t journalTicket) error {
	if p := w.failed.Load(); p != nil {
		return *p
	}
	if t == failedTicket {
		return errors.New("memory: change not journaled")
	}
	if err := w.j.Check(t); err != nil {
		if !errors.Is(err, journal.ErrClosed) {
			w.fail()
		}
		return fmt.Errorf("memory: journal: %w", err)
	}
	return nil
}

// fail reports that the journal stopped acknowledging.
func (w *wal) fail() { w.failedOnce.Do(func() { close(w.failedCh) }) }

// Failed is closed when the journal has failed (a write or fsync error):
// from then on every change is answered with an error and the daemon
// should exit so that a restart recovers what is on disk. It is nil (never
// ready) for a volatile backend.
func (b *Backend) Failed() <-chan struct{} {
	if b.wal == nil {
		return nil
	}
	return b.wal.failedCh
}

// Open returns a memory backend that keeps its state in opts.DataDir: it
// loads the newest snapshot there, replays the journal after it, and from
// then on journals every change before acknowledging it (docs/persistence.md).
// Close takes a final snapshot and releases the directory. With an empty
// DataDir it is New.
func Open(ctx context.Context, opts Options) (*Backend, error) {
	b := New(opts)
	if opts.DataDir == "" {
		return b, nil
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	start := time.Now()
	j, err := journal.Open(journal.Options{Dir: opts.DataDir, Sync: opts.Sync, SyncInterval: opts.SyncInterval, Logger: log, Recover: opts.Recover, ContentVersion: recordFormat})
	if err != nil {
		return nil, fmt.Errorf("memory backend: data directory %s: %w", opts.DataDir, err)
	}
	w := &wal{
		j:             j,
		holdReplies:   opts.Sync == journal.SyncGroup,
		blobs:         newBlobStore(opts.DataDir, log),
		recover:       opts.Recover,
		log:           log,
		snapshotBytes: opts.SnapshotBytes,
		captureChunk:  captureChunk,
		failedCh:      make(chan struct{}),
		kick:          make(chan struct{}, 1),
		stop:          make(chan struct{}),
		done:          make(chan struct{}),
		snapshots:     newSnapshotHistogram(),
		needBase:      true,
		maxDeltas:     defaultMaxDeltas,
		deltaShare:    defaultDeltaShare,
	}
	if w.snapshotBytes <= 0 {
		w.snapshotBytes = DefaultSnapshotBytes
	}
	b.wal = w
	opened := time.Since(start)
	// loaded: the snapshot and the deltas after it, of which full is the
	// full snapshot (w.loadTimes the rest).
	var loaded, full time.Duration
	resumeGC := pauseGC() // gcpause.go
	bigTail := j.ReplayBytes() > maxGCPausedReplay
	tail := b.startTail()
	err = j.ReplayWith(journal.ReplayFuncs{
		Snapshot: func(r io.Reader, info journal.SnapshotInfo) error {
			t := time.Now()
			err := b.loadSnapshot(r, info)
			full = time.Since(t)
			loaded = full
			if bigTail {
				resumeGC()
			}
			return err
		},
		Delta: func(r io.Reader, info journal.SnapshotInfo) error {
			t := time.Now()
			err := b.loadDelta(r, info)
			loaded += time.Since(t)
			return err
		},
		Apply:   tail.apply,
		Applied: tail.applied,
	})
	if terr := tail.stop(); err == nil {
		err = terr
	}
	resumeGC()
	if err == nil {
		err = ctx.Err()
	}
	replayed := time.Since(start) - opened - loaded
	if err != nil {
		j.Close()
		return nil, fmt.Errorf("memory backend: recovering %s: %w", opts.DataDir, err)
	}
	rep := j.Report()
	units := 0
	for _, ns := range b.namespaces {
		for _, sp := range ns.st.specs {
			units += len(sp.units)
		}
	}
	attrs := []any{"dir", opts.DataDir, "sync", journal.FormatSync(opts.Sync, opts.SyncInterval), "snapshot", rep.Snapshot,
		"deltas", len(rep.Deltas), "records_replayed", rep.Records, "namespaces", len(b.namespaces), "units", units, "took", time.Since(start),
		"open_journal", opened, "load_snapshot", loaded, "load_full", full, "load_deltas", w.loadTimes.deltas, "settle_heaps", w.loadTimes.settled,
		"replay_journal", replayed}
	if rep.TornTail != "" {
		attrs = append(attrs, "torn_tail_truncated", rep.TornTail, "torn_bytes", rep.TruncatedSize)
	}
	if len(rep.SetAside) > 0 {
		attrs = append(attrs, "damaged_files_set_aside", rep.SetAside)
	}
	if len(rep.Missing) > 0 {
		attrs = append(attrs, "missing_segments", rep.Missing)
	}
	log.Info("memory backend recovered", attrs...)
	b.resetStats()
	// The journal replayed counts toward the next snapshot, so restarts
	// after crashes do not let it grow without bound.
	if w.sinceSnapshot.Add(rep.Bytes) > w.snapshotBytes {
		w.kick <- struct{}{}
	}
	go b.snapshotLoop()
	return b, nil
}

// applyRecord replays one journal record. A record that decodes but does
// not fit the state (which only a bug can produce: records are
// checksummed) stops recovery with an error instead of crashing.
func (b *Backend) applyRecord(rec []byte, format uint32) error {
	d, err := decodeRecord(rec, format)
	if err != nil {
		return fmt.Errorf("memory: bad journal record: %w", err)
	}
	return b.applyDecoded(d)
}

// applyDecoded applies a decoded journal record (applyRecord).
func (b *Backend) applyDecoded(d decodedRecord) (err error) {
	ns := b.replayNamespace(d.namespace)
	if d.op == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("memory: journal record %T of namespace %q does not apply to the recovered state: %v", d.op, d.namespace, p)
		}
	}()
	d.op.apply(ns.st)
	return nil
}

// replayNamespace returns the named namespace during recovery, creating it
// without journaling (its record is being replayed).
func (b *Backend) replayNamespace(name string) *namespace {
	ns := b.namespaces[name]
	if ns == nil {
		ns = newNamespace(name, b.opts)
		ns.wal = b.wal
		ns.st.track = true
		b.namespaces[name] = ns
	}
	return ns
}

// snapshotLoop takes a snapshot whenever the journal has grown past the
// threshold since the last one.
func (b *Backend) snapshotLoop() {
	w := b.wal
	defer close(w.done)
	for {
		select {
		case <-w.stop:
			return
		case <-w.kick:
		}
		if w.sinceSnapshot.Load() <= w.snapshotBytes {
			continue
		}
		if _, err := b.Snapshot(context.Background()); err != nil {
			w.log.Error("background snapshot failed; the journal keeps growing until one succeeds", "err", err)
			select { // do not retry in a tight loop
			case <-w.stop:
				return
			case <-time.After(10 * time.Second):
			}
		}
	}
}

// SnapshotStats describe one snapshot.
type SnapshotStats struct {
	Units int // units in the snapshot
	// Pause is how long every namespace was locked at the boundary (to
	// rotate the journal and copy specs, workers and groups); LongestHold
	// the longest single lock hold while the units were copied after it.
	Pause, LongestHold time.Duration
	Encode             time.Duration // copying, encoding and writing, outside the pause
	// Saved counts the units changed while they were being copied, whose
	// value at the boundary was saved on write (cow.go).
	Saved int
	// Bytes is the snapshot's encoded size, BlobBytes the bytes of unit
	// data written to new blobs for it (blobs.go): together what the
	// snapshot wrote.
	Bytes, BlobBytes int64
	Skipped          bool // volatile backend or closed journal: nothing written
	// Delta says the snapshot is a delta (delta.go): Units are then the
	// units changed or added since the previous snapshot, Gone the keys
	// deleted since.
	Delta bool
	Gone  int
}

// Snapshot compacts the journal: it locks every namespace (and namespace
// creation) just long enough to rotate the journal and start a capture
// (cow.go), copies the units in short lock holds while service goes on,
// encoding and writing each chunk as it is copied, and finally lets the
// journal delete what the snapshot supersedes. A volatile backend returns Skipped.
func (b *Backend) Snapshot(ctx context.Context) (SnapshotStats, error) {
	w := b.wal
	if w == nil {
		return SnapshotStats{Skipped: true}, nil
	}
	b.snapMu.Lock()
	defer b.snapMu.Unlock()

	b.mu.Lock()
	names := make([]string, 0, len(b.namespaces))
	for n := range b.namespaces {
		names = append(names, n)
	}
	slices.Sort(names)
	start := time.Now()
	for _, n := range names {
		b.namespaces[n].mu.Lock()
	}
	boundary := w.j.Rotate()
	w.sinceSnapshot.Store(0)
	var caps []*capture
	delta := false
	if boundary.Seq != 0 {
		delta = w.wantDelta(b.dirtyUnits(names))
		for _, n := range names {
			caps = append(caps, beginCapture(b.namespaces[n], w.captureChunk, delta))
		}
	}
	stats := SnapshotStats{Pause: time.Since(start), Delta: delta}
	for _, n := range names {
		b.namespaces[n].mu.Unlock()
	}
	b.mu.Unlock()
	if boundary.Seq == 0 {
		return SnapshotStats{Skipped: true}, nil
	}

	start = time.Now()
	blobs := w.blobs.batch()
	written := w.blobs.written
	write := func(out io.Writer) error {
		cw := &countingWriter{w: out}
		err := writeCaptures(cw, caps, blobs, w.betweenChunks)
		stats.Bytes = cw.n
		return err
	}
	if delta {
		write = func(out io.Writer) error {
			cw := &countingWriter{w: out}
			var err error
			stats.Units, stats.Gone, err = writeDeltaCaptures(cw, caps, blobs, w.betweenChunks)
			stats.Bytes = cw.n
			return err
		}
	}
	// The changes tracked so far are taken by the captures: unless this
	// snapshot is installed, the next one must be full.
	w.needBase = true
	var err error
	if delta {
		err = w.j.WriteDelta(ctx, boundary, write)
	} else {
		err = w.j.WriteSnapshot(ctx, boundary, write)
	}
	// A capture the journal never asked for is walked anyway: it ends
	// copy-on-write, and the next capture counts on its marks (cow.go).
	for _, c := range caps {
		if !c.walked {
			c.units(false, w.betweenChunks, nil)
		}
		stats.LongestHold = max(stats.LongestHold, c.longest)
		stats.Saved += c.saved
		if !delta {
			for i := range c.out.specs {
				stats.Units += c.out.specs[i].units
			}
		}
	}
	stats.BlobBytes = w.blobs.written - written
	stats.Encode = time.Since(start)
	if err != nil {
		return stats, fmt.Errorf("memory: snapshot: %w", err)
	}
	w.needBase = false
	if delta {
		w.deltas++
		w.deltaUnits += stats.Units + stats.Gone
	} else {
		w.baseUnits, w.deltas, w.deltaUnits = stats.Units, 0, 0
		// Only now that the snapshot is installed may the blobs it does
		// not refer to go (deltas only add blobs: the full snapshot
		// before them still refers to its own).
		w.blobs.collect(blobs.refs)
	}
	w.snapshots.Observe((stats.Pause + stats.Encode).Seconds())
	w.log.Info("snapshot written", "delta", stats.Delta, "units", stats.Units, "deleted", stats.Gone, "namespaces", len(caps), "pause", stats.Pause,
		"longest_hold", stats.LongestHold, "saved_on_write", stats.Saved, "write", stats.Encode,
		"bytes", stats.Bytes, "blob_bytes_written", stats.BlobBytes)
	return stats, nil
}

// loadSnapshot restores the state a snapshot holds (recovery only).
func (b *Backend) loadSnapshot(r io.Reader, info journal.SnapshotInfo) error {
	units, lost := 0, false
	// With deltas to come, the heaps are put in order once, after the
	// last (loadDelta): a delta's unit then costs about what a
	// snapshot's does, not a heap removal and insertion.
	err := loadParallel(r, info.MaxBytes, b.wal.readBlob, loadBatch, info.Deltas > 0, func(name string, st *state, dropped []coordinate.UnitRef) error {
		if _, dup := b.namespaces[name]; dup {
			return fmt.Errorf("snapshot holds namespace %q twice", name)
		}
		if len(dropped) > 0 {
			lost = true
			b.wal.log.Error("recovery dropped work units whose data blob is missing or damaged",
				"namespace", name, "units", len(dropped), "dropped", dropped)
		}
		st.track = true
		units += st.unitCount()
		b.replayNamespace(name).st = st
		return nil
	})
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	if b.wal != nil {
		b.wal.loadedSnapshot(units)
		// The units dropped are still in this snapshot: only a full
		// snapshot makes their loss stick (a delta has no tombstone
		// for them), so that the next start needs no -recover.
		b.wal.needBase = lost
	}
	return nil
}

// readBlob is loadSnapshot's blobReader: it reads and checks a blob and
// remembers its hash for the next snapshot. Under -recover a missing or
// damaged blob drops its unit (named in the log) instead of stopping.
func (w *wal) readBlob(h blobHash, n int) ([]byte, error) {
	data, err := w.blobs.read(h, n)
	if err != nil {
		if w.recover {
			w.log.Error("recovery drops a work unit: its data blob is missing or damaged", "err", err)
			return nil, errDropUnit
		}
		return nil, err
	}
	w.blobs.known[keyOf(data)] = h
	return data, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// closeJournal stops the snapshot loop, takes a final snapshot so the next
// start replays little, and closes the journal.
func (b *Backend) closeJournal() error {
	w := b.wal
	close(w.stop)
	<-w.done
	var errs []error
	if _, err := b.Snapshot(context.Background()); err != nil && !errors.Is(err, journal.ErrClosed) {
		errs = append(errs, err)
	}
	if err := w.j.Close(); err != nil {
		errs = append(errs, fmt.Errorf("memory: closing journal: %w", err))
	}
	st := w.j.Stats()
	perGroup, waitersPerGroup := 0.0, 0.0
	if st.Flushes > 0 {
		perGroup = float64(st.Records) / float64(st.Flushes)
		waitersPerGroup = float64(st.Waiters) / float64(st.Flushes)
	}
	w.log.Info("journal closed", "records", st.Records, "bytes", st.Bytes, "groups", st.Flushes,
		"fsyncs", st.Syncs, "records_per_group", fmt.Sprintf("%.1f", perGroup),
		"waiters_per_group", fmt.Sprintf("%.2f", waitersPerGroup))
	return errors.Join(errs...)
}

// JournalGroups returns the journal's written groups and the Wait calls
// they released (journal.Journal.GroupCounts; zero for a volatile
// backend).
func (b *Backend) JournalGroups() (groups, waiters uint64) {
	if b.wal == nil {
		return 0, 0
	}
	return b.wal.j.GroupCounts()
}

// JournalStats returns the journal's counters (zero for a volatile backend).
func (b *Backend) JournalStats() journal.Stats {
	if b.wal == nil {
		return journal.Stats{}
	}
	return b.wal.j.Stats()
}
