package memory

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// Options configure a memory backend.
type Options struct {
	Clock        coordinate.Clock // nil = coordinate.SystemClock{}
	EnforceMinGB bool
	StallTimeout time.Duration // group watchdog; 0 = coordinate.DefaultStallTimeout

	// Persistence, used by Open only (New is always volatile).
	DataDir       string             // journal and snapshots; "" = volatile
	Sync          journal.SyncPolicy // when a change counts as durable
	SyncInterval  time.Duration      // fsync interval under journal.SyncInterval
	Recover       bool               // keep what is readable past damage
	SnapshotBytes int64              // journal growth that triggers a snapshot; 0 = DefaultSnapshotBytes
	Logger        *slog.Logger       // recovery and snapshot logs; nil = slog.Default()
}

// Backend is the in-memory coordinate.Backend.
type Backend struct {
	opts Options

	mu         sync.Mutex
	namespaces map[string]*namespace

	wal       *wal       // nil when volatile
	snapMu    sync.Mutex // one snapshot at a time
	closeOnce sync.Once
	closeErr  error
}

var _ coordinate.Backend = (*Backend)(nil)

// New returns an empty memory backend.
func New(opts Options) *Backend {
	if opts.Clock == nil {
		opts.Clock = coordinate.SystemClock{}
	}
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = coordinate.DefaultStallTimeout
	}
	return &Backend{opts: opts, namespaces: make(map[string]*namespace)}
}

// Namespace returns the named namespace, creating it if needed.
func (b *Backend) Namespace(ctx context.Context, name string) (coordinate.Namespace, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	ns, ok := b.namespaces[name]
	if ok {
		b.mu.Unlock()
		return ns, nil
	}
	ns = newNamespace(name, b.opts)
	b.namespaces[name] = ns
	if b.wal == nil {
		b.mu.Unlock()
		return ns, nil
	}
	// The creation is journaled so an empty namespace survives a restart.
	ns.wal = b.wal
	ns.st.track = true // for delta snapshots (dirty.go)
	var enc recordEncoder
	t := b.wal.append(&enc, name, nil)
	b.mu.Unlock()
	if err := b.wal.wait(ctx, t); err != nil {
		return nil, err
	}
	return ns, nil
}

// Namespaces lists the namespace names, sorted.
func (b *Backend) Namespaces(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	names := make([]string, 0, len(b.namespaces))
	for n := range b.namespaces {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// Close releases the backend. A persistent backend (Open) takes a final
// snapshot and closes its journal; calls made afterwards fail. A volatile
// one holds nothing to release.
func (b *Backend) Close() error {
	if b.wal == nil {
		return nil
	}
	b.closeOnce.Do(func() { b.closeErr = b.closeJournal() })
	return b.closeErr
}

// The optional capabilities a memory backend has.
var (
	_ coordinate.FailureNotifier = (*Backend)(nil) // Failed (persist.go)
	_ coordinate.ReadyChecker    = (*Backend)(nil)
)

// Ready reports whether the backend can take changes: it cannot once its
// journal has failed (see Failed).
func (b *Backend) Ready(context.Context) error {
	select {
	case <-b.Failed():
		return errors.New("memory backend: the journal failed; restart the daemon to recover what is on disk")
	default:
		return nil
	}
}
