package journal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
)

// Journal is an append-only log of opaque records, split into segments and
// compacted by snapshots. See the package documentation for the contract.
type Journal struct {
	dir  string
	opts Options
	log  *slog.Logger
	lock *os.File // the directory, flocked while open

	plan replayPlan // decided by Open, carried out by Replay

	mu       sync.Mutex // guards the fields below; never held across I/O
	ready    bool       // Replay succeeded and the flusher runs
	replayed bool       // Replay was called (successfully or not)
	closed   bool
	pending  []chunk // appended but not yet taken by the flusher
	last     Ticket  // last ticket handed out
	curSeg   uint64  // segment receiving new appends
	rotBytes int64   // bytes appended since the last rotation
	durable  Ticket  // every ticket up to this one is durable
	failed   error   // sticky write/fsync failure
	stopped  bool    // the flusher has exited
	// Waiters sleep on the channel of the round that will cover their
	// ticket, so a round's end wakes only its own waiters (not those of
	// the round taken next, who would wake for nothing and kick the
	// flusher into an empty round). taken is the last ticket of the round
	// being written, roundDone is closed when it is published (nil
	// between rounds), nextDone when the round after it is.
	taken     Ticket
	roundDone chan struct{}
	nextDone  chan struct{}
	// waiters counts the Waits that went to sleep on roundDone and
	// nextDone (an overcount if some gave up on their context).
	roundWaiters, nextWaiters int
	// roundNotices and nextNotices are the Notify callbacks of the round
	// being written and of the one after it; the flusher runs a round's
	// when it publishes it.
	roundNotices, nextNotices []notice
	// gatherWant, while the flusher gathers the next round (gather.go),
	// is the count of its waiters that makes one of them kick it; 0: any
	// waiter kicks.
	gatherWant int
	// released is how many Wait and Notify calls the last published
	// round released (set by publish, read by the flusher).
	released int

	kick chan struct{} // wakes the flusher (capacity 1)
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the flusher exits

	// Owned by the flusher goroutine once Replay has started it.
	seg      *segmentFile // nil once closed or after a failed switch
	gatherer gatherer     // the waiters recent groups released (gather.go)
	spare    []byte       // guarded by mu: the buffer takePending hands out next

	snapMu   sync.Mutex // serialises WriteSnapshot and WriteDelta
	lastSnap uint64     // sequence number of the newest snapshot or delta on disk (the chain's end)

	report   Report
	counters counters

	// openDataSync opens a segment for O_DSYNC writes (datasync_*.go);
	// tests replace it between Open and Replay.
	openDataSync func(path string) (*os.File, error)
}

// chunk is a run of encoded frames bound for one segment. A chunk whose
// segment differs from the previous one marks a rotation.
type chunk struct {
	seg uint64
	buf []byte
}

// Report describes what Open and Replay found and did.
type Report struct {
	Snapshot      string   // path of the snapshot loaded, "" if none
	Deltas        []string // paths of the deltas loaded after it, in order
	Segments      int      // segments replayed
	Records       int      // records passed to apply
	Bytes         int64    // bytes of the segments replayed, headers and framing included
	TornTail      string   // "file@offset" of a truncated torn tail, "" if none
	TruncatedSize int64    // bytes removed by that truncation
	SetAside      []string // damaged or unreplayable files renamed under Recover
	Missing       []string // segments found missing under Recover (their records are lost)
	Removed       []string // leftovers removed (unfinished snapshots, superseded files)
}

// Open opens (or creates) the journal in opts.Dir, takes the directory
// lock, removes unfinished snapshots, chooses the newest valid snapshot and
// checks that the segments after it form an unbroken sequence. Nothing is
// read into the caller's state until Replay, which must be called (even on
// an empty directory) before Append.
func Open(opts Options) (*Journal, error) {
	if opts.Dir == "" {
		return nil, errors.New("journal: Options.Dir is empty")
	}
	switch {
	case opts.Sync == SyncInterval && opts.SyncInterval <= 0:
		return nil, fmt.Errorf("journal: Options.SyncInterval must be positive under SyncInterval, got %v", opts.SyncInterval)
	case opts.Sync != SyncGroup && opts.Sync != SyncNone && opts.Sync != SyncInterval:
		return nil, fmt.Errorf("journal: invalid Options.Sync %d", int(opts.Sync))
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: creating data directory: %w", err)
	}
	lock, err := lockDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	j := &Journal{
		dir:      opts.Dir,
		opts:     opts,
		log:      log.With("journal", opts.Dir),
		lock:     lock,
		nextDone: make(chan struct{}),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		gatherer: newGatherer(),

		openDataSync: openDataSync,
	}
	if err := j.planReplay(); err != nil {
		unlockDir(lock)
		return nil, err
	}
	return j, nil
}

// Dir returns the data directory.
func (j *Journal) Dir() string { return j.dir }

// Report returns what Open and Replay found and did.
func (j *Journal) Report() Report {
	j.mu.Lock()
	defer j.mu.Unlock()
	r := j.report
	r.SetAside = append([]string(nil), r.SetAside...)
	r.Removed = append([]string(nil), r.Removed...)
	r.Missing = append([]string(nil), r.Missing...)
	return r
}

// note updates the report under the lock, so Report may run concurrently.
func (j *Journal) note(update func(*Report)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	update(&j.report)
}

// Close writes and fsyncs every record appended so far (whatever the sync
// policy), stops the flusher and releases the directory. Records appended
// after Close are never written: Wait reports ErrClosed for them. It
// returns the journal's write failure, if one happened. A snapshot being
// written is allowed to finish first. Calling Close again returns nil.
func (j *Journal) Close() error {
	// A snapshot being written finishes first (it needs the flusher), so
	// none is installed after the directory lock is released.
	j.snapMu.Lock()
	defer j.snapMu.Unlock()
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	running := j.ready
	j.mu.Unlock()

	var err error
	if running {
		close(j.stop)
		<-j.done
		j.mu.Lock()
		err = j.failed
		j.mu.Unlock()
	} else if j.seg != nil {
		err = j.seg.finishClose()
	}
	if uerr := unlockDir(j.lock); err == nil && uerr != nil {
		err = fmt.Errorf("journal: releasing lock: %w", uerr)
	}
	return err
}
