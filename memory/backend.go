package memory

import (
	"context"
	"slices"
	"sync"
	"time"

	"coordinated/coordinate"
)

// DefaultStallTimeout is how long a group may go without a status change
// while it has runnable units before it is reported stalled.
const DefaultStallTimeout = 10 * time.Minute

// Options configure a memory backend.
type Options struct {
	Clock        coordinate.Clock // nil = coordinate.SystemClock{}
	EnforceMinGB bool
	StallTimeout time.Duration // group watchdog; 0 = DefaultStallTimeout
}

// Backend is the in-memory coordinate.Backend.
type Backend struct {
	opts Options

	mu         sync.Mutex
	namespaces map[string]*namespace
}

var _ coordinate.Backend = (*Backend)(nil)

// New returns an empty memory backend.
func New(opts Options) *Backend {
	if opts.Clock == nil {
		opts.Clock = coordinate.SystemClock{}
	}
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = DefaultStallTimeout
	}
	return &Backend{opts: opts, namespaces: make(map[string]*namespace)}
}

// Namespace returns the named namespace, creating it if needed.
func (b *Backend) Namespace(ctx context.Context, name string) (coordinate.Namespace, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	ns, ok := b.namespaces[name]
	if !ok {
		ns = newNamespace(name, b.opts)
		b.namespaces[name] = ns
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

// Close does nothing: the backend holds no external resources.
func (b *Backend) Close() error { return nil }
