package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/postgres/cachekeep"
)

// The statements, from sql/backend.sql.
var (
	sharedBuffersSQL  = namedSQL("shared_buffers")
	currentSchemaSQL  = namedSQL("current_schema")
	namespaceIDSQL    = namedSQL("namespace_id")
	namespacesListSQL = namedSQL("namespaces_list")
)

// Options configures a Backend.
type Options struct {
	Clock        coordinate.Clock // nil = coordinate.SystemClock{}
	EnforceMinGB bool
	StallTimeout time.Duration // group watchdog; 0 = coordinate.DefaultStallTimeout
	// MaxConns caps the connection pool; 0 = pgxpool's default.
	MaxConns int32
	Logger   *slog.Logger // nil = slog.Default()
	// VacuumAfterClaims is how many units this backend claims between the
	// VACUUMs of work_unit it runs itself (cachekeep/vacuum.go); 0 =
	// 100,000, < 0 = never.
	VacuumAfterClaims int
	// NoCacheKeeping turns off the cache machinery (package cachekeep):
	// read-ahead of claims, warming of queue fronts, and the VACUUM and
	// ANALYZE the backend runs itself.
	NoCacheKeeping bool
	// RequestTimeout bounds how long a call waits for a database that
	// does not answer (liveness.go); 0 = DefaultRequestTimeout, < 0 =
	// wait forever.
	RequestTimeout time.Duration
	// tracer, set by tests, sees every statement of the pool's
	// connections (pgx.ConnConfig.Tracer).
	tracer pgx.QueryTracer
}

// Backend is a coordinate.Backend stored in PostgreSQL.
type Backend struct {
	pool    *pgxpool.Pool
	clock   coordinate.Clock
	opts    Options
	log     *slog.Logger
	commits *committer
	sweeper sweeper
	cache   cacheKeeper // cachekeeper.go: package cachekeep, or nothing
	live    *liveness
	events  *transitions // unit transitions this process committed (events.go)
	started time.Time    // when New returned (stats.go's oldest available)
	// chainHints steers finishes that chain past finish_chain.sql.
	chainHints chainHints
	// shared wakes long-polling calls when other daemons add work
	// (sharedwork.go).
	shared *sharedWork
	// workReady: the coordinate.WorkNotifier listeners (workready.go).
	workReady workListeners

	mu         sync.Mutex
	namespaces map[string]*namespace // by name; ids never change once created
}

var _ coordinate.Backend = (*Backend)(nil)

// New connects to the database at url, applies pending migrations and
// returns a Backend.
func New(ctx context.Context, url string, opts Options) (*Backend, error) {
	if opts.Clock == nil {
		opts.Clock = coordinate.SystemClock{}
	}
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = coordinate.DefaultStallTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if err := Migrate(ctx, url); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres backend: parse url: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	noJIT(cfg.ConnConfig)
	if opts.tracer != nil {
		cfg.ConnConfig.Tracer = opts.tracer
	}
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		registerFastArrays(conn.TypeMap()) // pgarrays.go
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres backend: connect: %w", err)
	}
	b := &Backend{
		pool:       pool,
		clock:      opts.Clock,
		opts:       opts,
		log:        opts.Logger,
		namespaces: map[string]*namespace{},
		live:       newLiveness(cfg.ConnConfig.Copy(), opts.RequestTimeout, opts.Logger),
		events:     newTransitions(),
		started:    opts.Clock.Now(),
	}
	var buffers int
	if err := pool.QueryRow(ctx, sharedBuffersSQL).Scan(&buffers); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres backend: read shared_buffers: %w", err)
	}
	var schema string
	if err := pool.QueryRow(ctx, currentSchemaSQL).Scan(&schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres backend: read current_schema: %w", err)
	}
	b.cache = noKeeper{}
	if !opts.NoCacheKeeping {
		b.cache = keeper{cachekeep.New(cachekeep.Config{
			Pool:              pool,
			Clock:             opts.Clock,
			Logger:            opts.Logger,
			SharedBuffers:     buffers,
			VacuumAfterClaims: opts.VacuumAfterClaims,
		})}
	}
	b.commits = newCommitter(b)
	b.shared = newSharedWork(b, schema)
	return b, nil
}

// Close stops the committer and the listener for other daemons' work, and
// closes the connection pool.
func (b *Backend) Close() error {
	b.shared.close()
	b.commits.close()
	b.cache.close()
	b.pool.Close()
	b.live.close()
	return nil
}

// Namespace returns the namespace called name, creating it if needed.
// Its calls run under the liveness watch (watched.go).
func (b *Backend) Namespace(ctx context.Context, name string) (coordinate.Namespace, error) {
	ctx, end := b.live.watch(ctx)
	ns, err := b.namespace(ctx, name)
	if err = end(err); err != nil {
		return nil, err
	}
	return ns.watched, nil
}

func (b *Backend) namespace(ctx context.Context, name string) (*namespace, error) {
	b.mu.Lock()
	ns, ok := b.namespaces[name]
	b.mu.Unlock()
	if ok {
		return ns, nil
	}
	var id int64
	err := b.pool.QueryRow(ctx, namespaceIDSQL, []byte(name)).Scan(&id)
	if err != nil {
		return nil, fmt.Errorf("postgres namespace %q: %w", name, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if ns, ok := b.namespaces[name]; ok { // created meanwhile: share its state
		return ns, nil
	}
	ns = &namespace{b: b, id: id, name: name}
	ns.watched = &watchedNamespace{ns: ns, live: b.live}
	b.namespaces[name] = ns
	return ns, nil
}

// Namespaces lists the namespace names, sorted.
func (b *Backend) Namespaces(ctx context.Context) (names []string, err error) {
	ctx, end := b.live.watch(ctx)
	defer func() { err = end(err) }()
	rows, err := b.pool.Query(ctx, namespacesListSQL)
	if err != nil {
		return nil, fmt.Errorf("postgres namespaces: %w", err)
	}
	names, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var n []byte
		err := r.Scan(&n)
		return string(n), err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres namespaces: %w", err)
	}
	sort.Strings(names)
	return names, nil
}

// namespace is one coordinate.Namespace: a row of the namespace table.
type namespace struct {
	b    *Backend
	id   int64
	name string
	// watched is this namespace as the Backend hands it out.
	watched *watchedNamespace
	// sole is the spec get_work may claim without reading (schedguess.go).
	sole soleSpecs
	// specRows are the spec rows its scheduler's reads decoded (specrows.go).
	specRows specRows
}

var _ coordinate.Namespace = (*namespace)(nil)

func (ns *namespace) Name() string { return ns.name }

func (ns *namespace) now() time.Time { return ns.b.clock.Now() }

// inTx runs fn in a transaction, retrying it when PostgreSQL reports a
// deadlock or serialization failure.
func (b *Backend) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	for attempt := 0; ; attempt++ {
		err := pgx.BeginFunc(ctx, b.pool, fn)
		if err == nil || attempt >= 10 || !retryable(err) {
			return err
		}
		b.log.Debug("postgres backend: retrying transaction", "attempt", attempt, "err", err)
	}
}

// inTxCounted is inTx for a transaction that changes units: fn gets a
// fresh countDelta on each attempt (and applies it), and the transitions
// of the attempt that committed are counted (events.go).
func (b *Backend) inTxCounted(ctx context.Context, fn func(tx pgx.Tx, d countDelta) error) error {
	var d countDelta
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		d = newCountDelta()
		return fn(tx, d)
	})
	if err == nil {
		b.events.committed(d.events)
	}
	return err
}

// errNotFound reports whether err is pgx.ErrNoRows.
func errNotFound(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
