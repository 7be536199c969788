package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// A stalled database never hangs clients. Every call's database work
// (pool acquire, lock waits, statements, the committer's batches) runs
// under a watch: once it has taken half the request timeout, the watch
// asks whether the database still answers (a ping on a connection of its
// own, shared by every call that asks at the same time and trusted for
// half the timeout), and cancels the work if it does not answer within
// the other half. A frozen or unreachable database therefore fails every
// call with coordinate.ErrUnavailable within about the request timeout,
// while work that is merely long (adding a million units in one call)
// runs to its end as long as the database answers. pgx closes a
// connection whose context ends in the middle of a statement, and the
// pool opens new ones once the database is back.
//
// The same ping is the backend's Ready check, and the backend logs when
// the database stops answering and when it answers again.

// DefaultRequestTimeout is Options.RequestTimeout's default.
const DefaultRequestTimeout = 5 * time.Second

// liveness tracks whether the database answers.
type liveness struct {
	cfg     *pgx.ConnConfig
	timeout time.Duration // the request timeout; <= 0: calls are never cut short
	log     *slog.Logger

	lastOK atomic.Int64 // time.Now().UnixNano() of the last proof of life
	down   atomic.Bool  // the last ping failed (logged once per outage)

	mu      sync.Mutex
	conn    *pgx.Conn // the ping's own connection; nil until needed or after a failure
	probing *probe    // the ping in flight, if any
}

// probe is one ping and its result.
type probe struct {
	done chan struct{}
	err  error
}

func newLiveness(cfg *pgx.ConnConfig, timeout time.Duration, log *slog.Logger) *liveness {
	return &liveness{cfg: cfg, timeout: timeout, log: log}
}

// alive records a proof of life (a call that got its answer).
func (l *liveness) alive() {
	l.lastOK.Store(time.Now().UnixNano())
	if l.down.Load() && l.down.CompareAndSwap(true, false) {
		l.log.Info("postgres backend ready: the database answers again")
	}
}

// check returns nil when the database answered within the last half
// timeout or answers a ping now, else an error wrapping
// coordinate.ErrUnavailable.
func (l *liveness) check(ctx context.Context) error {
	if time.Since(time.Unix(0, l.lastOK.Load())) < l.half() {
		return nil
	}
	l.mu.Lock()
	p := l.probing
	if p == nil {
		p = &probe{done: make(chan struct{})}
		l.probing = p
		go l.ping(p)
	}
	l.mu.Unlock()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// half is how long work runs before the watch pings, and how long a ping
// may take.
func (l *liveness) half() time.Duration {
	if l.timeout <= 0 {
		return DefaultRequestTimeout / 2
	}
	return l.timeout / 2
}

func (l *liveness) ping(p *probe) {
	ctx, cancel := context.WithTimeout(context.Background(), l.half())
	defer cancel()
	err := l.pingConn(ctx)
	if err != nil {
		p.err = fmt.Errorf("%w: the PostgreSQL server did not answer within %v: %v", coordinate.ErrUnavailable, l.half(), err)
		if l.down.CompareAndSwap(false, true) {
			l.log.Warn("postgres backend not ready: the database does not answer; requests fail until it does", "err", err)
		}
	} else {
		l.alive()
	}
	l.mu.Lock()
	l.probing = nil
	l.mu.Unlock()
	close(p.done)
}

// pingConn pings on the liveness connection, opening it when needed and
// dropping it after a failure. Only one ping runs at a time.
func (l *liveness) pingConn(ctx context.Context) error {
	if l.conn == nil {
		c, err := pgx.ConnectConfig(ctx, l.cfg)
		if err != nil {
			return err
		}
		l.conn = c
	}
	if err := l.conn.Ping(ctx); err != nil {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		l.conn.Close(closeCtx) //nolint:errcheck // the connection is dropped either way
		cancel()
		l.conn = nil
		return err
	}
	return nil
}

func (l *liveness) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.probing; p != nil {
		l.mu.Unlock()
		<-p.done
		l.mu.Lock()
	}
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		l.conn.Close(ctx) //nolint:errcheck // closing
		cancel()
		l.conn = nil
	}
}

// stalledError is the cause of a watched context the watch cancelled:
// the failed ping's error, which wraps coordinate.ErrUnavailable.
type stalledError struct{ err error }

func (e stalledError) Error() string { return e.err.Error() }
func (e stalledError) Unwrap() error { return e.err }

// watch returns a context for one call's database work and the function
// to call with the work's error when it ends: it stops the watch and, when
// the watch cut the work short, reports coordinate.ErrUnavailable.
func (l *liveness) watch(ctx context.Context) (context.Context, func(error) error) {
	ctx, w := l.watchCall(ctx)
	if w == nil {
		return ctx, func(err error) error { return err }
	}
	return ctx, w.end
}

// watchCall is watch for a call whose work may end after it returns (a
// held update, heldupdate.go): the call ends the watch with finish, and
// may ask to hear of a stall (onStall). The watcher is nil when l is nil
// or calls are never cut short; its methods then do nothing.
func (l *liveness) watchCall(ctx context.Context) (context.Context, *watcher) {
	if l == nil || l.timeout <= 0 {
		return ctx, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watcher{l: l, ctx: ctx, cancel: cancel}
	w.mu.Lock()
	w.timer = time.AfterFunc(l.half(), w.fire)
	w.mu.Unlock()
	return ctx, w
}

// watcher is the watch of one call.
type watcher struct {
	l      *liveness
	ctx    context.Context
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	timer  *time.Timer
	ended  bool
	// stalled is called when the watch cuts the work short (onStall);
	// cut says it has.
	stalled func()
	cut     bool
}

func (w *watcher) fire() {
	err := w.l.check(w.ctx)
	if w.ctx.Err() != nil {
		return // the call ended or its caller gave up
	}
	if err != nil {
		w.cancel(stalledError{err})
		w.mu.Lock()
		w.cut = true
		f := w.stalled
		w.mu.Unlock()
		if f != nil {
			f()
		}
		return
	}
	w.mu.Lock()
	if !w.ended {
		w.timer.Reset(w.l.half())
	}
	w.mu.Unlock()
}

// onStall has f called, on the watch's goroutine, when the watch cuts the
// work short; at once if it already has. For a call that returned without
// waiting for its work, whose context nobody watches any more.
func (w *watcher) onStall(f func()) {
	if w == nil {
		return
	}
	w.mu.Lock()
	cut := w.cut
	if !cut {
		w.stalled = f
	}
	w.mu.Unlock()
	if cut {
		f()
	}
}

// finish is end for a watcher that may be nil (no watch).
func (w *watcher) finish(err error) error {
	if w == nil {
		return err
	}
	return w.end(err)
}

func (w *watcher) end(err error) error {
	w.mu.Lock()
	w.ended = true
	w.timer.Stop()
	w.stalled = nil
	w.mu.Unlock()
	cause := context.Cause(w.ctx)
	w.cancel(nil)
	var st stalledError
	switch {
	case err == nil:
		w.l.alive()
	case errors.As(cause, &st):
		return fmt.Errorf("%w (request timeout %v)", st.err, w.l.timeout)
	}
	return err
}

// Ready implements coordinate.ReadyChecker: nil when the database
// answered within the last half request timeout or answers a ping now.
func (b *Backend) Ready(ctx context.Context) error {
	return b.live.check(ctx)
}
