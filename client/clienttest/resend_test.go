package clienttest

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/internal/testdaemon"
)

func quickRetries(addr string) client.Config {
	cfg := client.DefaultConfig(addr)
	cfg.BaseRetry = time.Millisecond
	return cfg
}

// throughProxy starts a daemon with spec "s" and returns a client of it,
// a client connected to it through a LossyProxy, and the proxy.
func throughProxy(t *testing.T) (direct, proxied *client.Client, p *testdaemon.LossyProxy) {
	t.Helper()
	daemon := testdaemon.Ours(t, "memory")
	direct = testdaemon.Dial(t, daemon)
	if err := direct.SetWorkSpec(t.Context(), spec("s")); err != nil {
		t.Fatal(err)
	}
	p = testdaemon.NewLossyProxy(t, daemon)
	proxied, err := client.New(quickRetries(p.Addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxied.Close() })
	if _, err := proxied.CountWorkUnits(t.Context(), "s"); err != nil { // connected
		t.Fatal(err)
	}
	return direct, proxied, p
}

// A request that changes the queue is not sent again once written and its
// reply lost: it may have been applied, and a second add_work_units would
// make a finished unit run again. The call fails with ErrOutcomeUnknown
// on the one connection it used. A read in the same spot is sent again
// and succeeds.
func TestLostReplyIsNotResent(t *testing.T) {
	c, pc, p := throughProxy(t)
	ctx := t.Context()
	p.Armed.Store(true)
	err := pc.AddWorkUnits(ctx, "s", []client.NewUnit{{Key: []byte("u"), Data: map[any]any{}}})
	if !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("add_work_units with its reply lost: %v, want ErrOutcomeUnknown", err)
	}
	if n := p.Conns.Load(); n != 1 {
		t.Errorf("add_work_units went out on %d connections, want 1 (not sent again)", n)
	}
	if counts, err := c.CountWorkUnits(ctx, "s"); err != nil || counts[1] != 1 {
		t.Errorf("the add was applied: counts %v %v", counts, err)
	}

	p.Armed.Store(true)
	if counts, err := pc.CountWorkUnits(ctx, "s"); err != nil || counts[1] != 1 {
		t.Errorf("count_work_units with its reply lost: %v %v, want it sent again and answered", counts, err)
	}
	if n := p.Conns.Load(); n != 3 { // the add's, the read's lost one, the read's again
		t.Errorf("%d connections after the read was sent again, want 3", n)
	}
}

// A connection the daemon closed while idle (a restart) is found closed
// before anything is written, so even a request that changes the queue
// goes out again on a new connection and succeeds.
func TestClosedIdleConnectionIsReopened(t *testing.T) {
	_, pc, p := throughProxy(t)
	ctx := t.Context()
	p.CloseAll()
	time.Sleep(50 * time.Millisecond) // the close reaches the client's socket
	if err := pc.AddWorkUnits(ctx, "s", []client.NewUnit{{Key: []byte("u"), Data: map[any]any{}}}); err != nil {
		t.Fatalf("add_work_units after the daemon closed the idle connection: %v", err)
	}
	if n := p.Conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// retryLog counts the client's retry messages.
type retryLog struct {
	mu   sync.Mutex
	n    int
	last string
}

func (h *retryLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *retryLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "retrying") {
		h.mu.Lock()
		h.n++
		h.last = r.Message
		h.mu.Unlock()
	}
	return nil
}
func (h *retryLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *retryLog) WithGroup(string) slog.Handler      { return h }

// A call cancelled just as its reply arrives must not cut the next call's
// deadline short: the cancellation's callback, already running, used to
// set a past deadline on the connection the next call then used, which
// failed with a timeout and was sent again.
func TestCancelledCallSparesTheNext(t *testing.T) {
	addr := testdaemon.Ours(t, "memory")
	h := &retryLog{}
	c, err := client.New(quickRetries(addr), client.WithLogger(slog.New(h)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bg := context.Background()
	for i := range 2000 {
		ctx, cancel := context.WithCancel(bg)
		go func() {
			time.Sleep(time.Duration(i%50) * time.Microsecond)
			cancel()
		}()
		c.ListWorkSpecs(ctx, nil, 1)
		if _, _, err := c.ListWorkSpecs(bg, nil, 1); err != nil {
			t.Fatalf("call %d with a live context: %v", i, err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n > 0 {
		t.Errorf("%d calls with a live context were sent again (%s)", h.n, h.last)
	}
}
