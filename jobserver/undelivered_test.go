package jobserver

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
)

// gatedNamespace holds GetWork's answer until released, as a slow database
// would.
type gatedNamespace struct {
	coordinate.Namespace
	entered, release chan struct{}
}

func (g *gatedNamespace) GetWork(ctx context.Context, req coordinate.WorkRequest) ([]coordinate.Attempt, error) {
	as, err := g.Namespace.GetWork(ctx, req)
	g.entered <- struct{}{}
	<-g.release
	return as, err
}

// testUndeliveredGetWorkReleased: a worker that gave up waiting for
// get_work and hung up does not keep the units it was leased: they are
// available again at once, not when the lease ends.
func testUndeliveredGetWorkReleased(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	addSpec(t, js, "ws", nil)
	call(t, js, "add_work_units", b("ws"), []any{tuple{b("a"), m{}}, tuple{b("b"), m{}}})
	gate := &gatedNamespace{Namespace: js.ns, entered: make(chan struct{}, 1), release: make(chan struct{}, 1)}
	js.ns = gate
	js.log = slog.New(slog.NewTextHandler(io.Discard, nil))

	nc := sendOverTCP(t, js, "get_work", b("w"), m{"max_jobs": 2, "lease_time": 3600})
	<-gate.entered
	nc.Close() // the worker gives up before the reply
	gate.release <- struct{}{}

	want := `128([[{'status': 1, 'expiration': null}, {'status': 1, 'expiration': null}], null])`
	got := ""
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if got = call(t, js, "get_work_unit_status", b("ws"), []any{b("a"), b("b")}); got == want {
			break
		}
	}
	expect(t, "units after an undelivered get_work", got, want)
	// A get_work whose reply is delivered keeps its lease.
	gate.release <- struct{}{}
	go func() { <-gate.entered }()
	expect(t, "delivered get_work", call(t, js, "get_work", b("w2"), m{}), `128([128(['ws', 'a', {}]), null])`)
}

// testLongPollAbandonedEnds: a worker long-polls, gives up and closes its
// connection; the call stops waiting at once (its place among the waiters
// freed), so the work that arrives later is not leased to nobody.
func testLongPollAbandonedEnds(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	var logged lockedBuffer
	js.log = slog.New(slog.NewTextHandler(&logged, nil))
	addSpec(t, js, "ws", nil)

	nc := sendOverTCP(t, js, "get_work", b("w"), m{"lease_time": 3600, "wait": 30})
	// Wait until the call is waiting (nothing to hand out), then hang up.
	waitUntil(t, "the get_work to wait", func() bool { return waiters(js) == 1 })
	nc.Close()
	// Well before the 30 s wait would have ended it anyway.
	for deadline := time.Now().Add(15 * time.Second); waiters(js) != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the abandoned get_work is still waiting")
		}
	}

	call(t, js, "add_work_units", b("ws"), []any{tuple{b("a"), m{}}})
	expect(t, "a unit added after the long-poll was abandoned",
		call(t, js, "get_work_unit_status", b("ws"), []any{b("a")}),
		`128([[{'status': 1, 'expiration': null}], null])`)
	if strings.Contains(logged.String(), "lease released") {
		t.Errorf("the abandoned call leased work:\n%s", logged.String())
	}
}

// sendOverTCP serves js on a loopback port for the rest of the test and
// sends it one request on a new connection, without reading the reply.
func sendOverTCP(t *testing.T, js *JobServer, method string, params ...any) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := cborrpc.NewServer(js, cborrpc.ServerOptions{Logger: js.log})
	go srv.Serve(ln)
	t.Cleanup(func() {
		js.StopWaiting()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	req, err := cborrpc.EncodeRequest(1, method, params...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(req); err != nil {
		t.Fatal(err)
	}
	return nc
}

// lockedBuffer is a bytes.Buffer safe for a logger and a test to share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
