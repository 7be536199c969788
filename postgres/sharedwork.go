package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// Long-poll wake-ups across daemons (coordinate.SharedWork), through
// PostgreSQL's LISTEN/NOTIFY. Each daemon listens on two channels over a
// connection of its own. Channels are database-wide, so every payload ends
// with the schema the daemon's tables are in, and receivers ignore other
// schemas' (other deployments sharing the database):
//
//   - coordinated_waiting, "<ns> <instance> <ms> <schema>": a daemon's get_work
//     calls in namespace ns may wait for up to ms more milliseconds. Sent
//     when a call starts waiting past what was last said, covering
//     waitingEvery more, so calls waiting all the time send one every
//     waitingEvery; receivers remember until when someone waits.
//   - coordinated_work, "<ns> <instance> - <schema>": work may have become available
//     in ns. AnnounceWork sends it only while another daemon waits (so a
//     fleet without long-polling workers sends none), and coalesces what
//     arrives within announceEvery into one notification per namespace.
//
// A daemon ignores its own notifications (instance, random per Backend).
// When its listening connection (re)connects it may have missed some: it
// wakes its watchers, says again until when its own calls wait, and asks
// the others to do the same (a coordinated_waiting payload with namespace
// 0 and 0 ms). When the connection fails it reconnects, backing off.

var (
	sharedWorkListenSQL = namedSQL("sharedwork_listen")
	sharedWorkNotifySQL = namedSQL("sharedwork_notify")
)

const (
	waitingChannel = "coordinated_waiting"
	workChannel    = "coordinated_work"
	// waitingEvery: a daemon whose calls keep waiting says so at most this
	// often, unless a call waits past what it last said plus this.
	waitingEvery = 5 * time.Second
	// announceEvery coalesces announcements.
	announceEvery = 5 * time.Millisecond
	// listenBackoffMax bounds the wait before reconnecting the listener.
	listenBackoffMax = 30 * time.Second
)

// sharedWork is the Backend's part: the listener, the namespaces' watchers
// and what other daemons said.
type sharedWork struct {
	b        *Backend
	instance string
	schema   string // current_schema() of the daemon's sessions

	mu        sync.Mutex
	listening bool
	watchers  map[int64]map[*func()]struct{}
	// othersUntil: until when another daemon's calls wait, per namespace.
	othersUntil map[int64]time.Time
	// saidUntil: until when this daemon last said its calls wait.
	saidUntil map[int64]time.Time
	// pending: notifications to send, by channel and payload.
	pending map[[2]string]struct{}
	sending bool

	stop    context.CancelFunc
	stopCtx context.Context
	wg      sync.WaitGroup
}

func newSharedWork(b *Backend, schema string) *sharedWork {
	var id [6]byte
	_, _ = rand.Read(id[:])
	ctx, cancel := context.WithCancel(context.Background())
	return &sharedWork{
		b:           b,
		instance:    hex.EncodeToString(id[:]),
		schema:      schema,
		watchers:    map[int64]map[*func()]struct{}{},
		othersUntil: map[int64]time.Time{},
		saidUntil:   map[int64]time.Time{},
		pending:     map[[2]string]struct{}{},
		stop:        cancel,
		stopCtx:     ctx,
	}
}

// close stops the listener and the sender.
func (s *sharedWork) close() {
	s.mu.Lock()
	s.stop() // under mu: no goroutine starts after this
	s.mu.Unlock()
	s.wg.Wait()
}

// waiting says calls in namespace ns wait for up to d. What is sent
// covers waitingEvery more than asked, so calls that start waiting within
// that time send nothing.
func (s *sharedWork) waiting(ns int64, d time.Duration) {
	now := time.Now()
	until := now.Add(d)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !until.After(s.saidUntil[ns]) {
		return // what was said covers this wait
	}
	said := until.Add(waitingEvery)
	s.saidUntil[ns] = said
	s.queueLocked(waitingChannel, s.payload(ns, said.Sub(now)))
}

// sayAgainLocked queues, for every namespace whose calls may still wait,
// until when they may.
func (s *sharedWork) sayAgainLocked() {
	now := time.Now()
	for ns, until := range s.saidUntil {
		if until.After(now) {
			s.queueLocked(waitingChannel, s.payload(ns, until.Sub(now)))
		}
	}
}

// othersWaiting reports whether another daemon's calls in ns wait now.
func (s *sharedWork) othersWaiting(ns int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Now().Before(s.othersUntil[ns])
}

// announce tells the waiting daemons that work may be available in ns.
func (s *sharedWork) announce(ns int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !time.Now().Before(s.othersUntil[ns]) {
		return
	}
	s.queueLocked(workChannel, s.payload(ns, -1))
}

// payload is a notification's text: namespace, instance, how long calls
// may wait (d < 0: none, for coordinated_work), schema.
func (s *sharedWork) payload(ns int64, d time.Duration) string {
	ms := "-"
	if d >= 0 {
		ms = strconv.FormatInt(d.Milliseconds(), 10)
	}
	return fmt.Sprintf("%d %s %s %s", ns, s.instance, ms, s.schema)
}

// queueLocked adds a notification to send and starts the sender if it is
// not running.
func (s *sharedWork) queueLocked(channel, payload string) {
	if s.stopCtx.Err() != nil {
		return
	}
	s.pending[[2]string{channel, payload}] = struct{}{}
	if s.sending {
		return
	}
	s.sending = true
	s.wg.Add(1)
	go s.send()
}

// send sends the pending notifications, each round's in one round trip,
// waiting announceEvery after each round so that what arrives meanwhile
// goes in the next one, and stops when nothing is pending.
func (s *sharedWork) send() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if len(s.pending) == 0 || s.stopCtx.Err() != nil {
			s.sending = false
			s.mu.Unlock()
			return
		}
		batch := s.pending
		s.pending = map[[2]string]struct{}{}
		s.mu.Unlock()
		// One round trip for the round, not one per notification.
		var notify pgx.Batch
		for n := range batch {
			notify.Queue(sharedWorkNotifySQL, n[0], n[1])
		}
		ctx, cancel := context.WithTimeout(s.stopCtx, s.b.opts.RequestTimeout)
		if err := s.b.pool.SendBatch(ctx, &notify).Close(); err != nil {
			s.b.log.Debug("postgres backend: notify", "notifications", len(batch), "err", err)
		}
		cancel()
		select {
		case <-time.After(announceEvery):
		case <-s.stopCtx.Done():
		}
	}
}

// watch calls wake when another daemon announces work in ns, until ctx
// ends.
func (s *sharedWork) watch(ctx context.Context, ns int64, wake func()) {
	key := &wake
	s.mu.Lock()
	if s.watchers[ns] == nil {
		s.watchers[ns] = map[*func()]struct{}{}
	}
	s.watchers[ns][key] = struct{}{}
	if !s.listening && s.stopCtx.Err() == nil {
		s.listening = true
		s.wg.Add(1)
		go s.listen()
	}
	s.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-s.stopCtx.Done():
	}
	s.mu.Lock()
	delete(s.watchers[ns], key)
	s.mu.Unlock()
}

// listen keeps a connection listening on both channels and dispatches
// what arrives, until the Backend closes.
func (s *sharedWork) listen() {
	defer s.wg.Done()
	backoff := 100 * time.Millisecond
	for s.stopCtx.Err() == nil {
		err := s.listenOnce()
		if s.stopCtx.Err() != nil {
			return
		}
		s.b.log.Warn("postgres backend: listening for other daemons' work failed; long-polling calls wake at the end of their wait until it is back", "err", err, "retry_in", backoff)
		s.wake(0, true)
		select {
		case <-time.After(backoff):
		case <-s.stopCtx.Done():
			return
		}
		backoff = min(2*backoff, listenBackoffMax)
	}
}

// listenOnce connects, listens and dispatches until the connection fails
// or the Backend closes.
func (s *sharedWork) listenOnce() error {
	ctx := s.stopCtx
	connectCtx, cancel := context.WithTimeout(ctx, s.b.opts.RequestTimeout)
	conn, err := pgx.ConnectConfig(connectCtx, s.b.pool.Config().ConnConfig.Copy())
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sharedWorkListenSQL); err != nil {
		return err
	}
	// What was sent before this connection listened is lost.
	s.wake(0, true)
	s.mu.Lock()
	s.queueLocked(waitingChannel, s.payload(0, 0))
	s.sayAgainLocked()
	s.mu.Unlock()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		s.received(n.Channel, n.Payload)
	}
}

// received handles one notification.
func (s *sharedWork) received(channel, payload string) {
	f := strings.SplitN(payload, " ", 4)
	if len(f) < 4 || f[1] == s.instance || f[3] != s.schema {
		return
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return
	}
	switch channel {
	case waitingChannel:
		ms, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || ms < 0 {
			return
		}
		if ns == 0 && ms == 0 { // a daemon (re)connected: who waits?
			s.mu.Lock()
			s.sayAgainLocked()
			s.mu.Unlock()
			return
		}
		until := time.Now().Add(time.Duration(ms) * time.Millisecond)
		s.mu.Lock()
		if until.After(s.othersUntil[ns]) {
			s.othersUntil[ns] = until
		}
		s.mu.Unlock()
	case workChannel:
		s.wake(ns, false)
	}
}

// wake calls the watchers of namespace ns, or of every namespace when
// all, outside the lock.
func (s *sharedWork) wake(ns int64, all bool) {
	s.mu.Lock()
	var fs []func()
	for id, ws := range s.watchers {
		if all || id == ns {
			for w := range ws {
				fs = append(fs, *w)
			}
		}
	}
	s.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

var _ coordinate.SharedWork = (*watchedNamespace)(nil)

func (w *watchedNamespace) Waiting(d time.Duration) { w.ns.b.shared.waiting(w.ns.id, d) }
func (w *watchedNamespace) OthersWaiting() bool     { return w.ns.b.shared.othersWaiting(w.ns.id) }
func (w *watchedNamespace) AnnounceWork()           { w.ns.b.shared.announce(w.ns.id) }
func (w *watchedNamespace) WatchWork(ctx context.Context, wake func()) {
	w.ns.b.shared.watch(ctx, w.ns.id, wake)
}
