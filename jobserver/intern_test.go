package jobserver

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/coordinated/coordinated/cborrpc"
)

// methodPointers is a cborrpc handler that records where each request's
// method name is stored.
type methodPointers struct {
	mu   sync.Mutex
	seen map[string][]*byte
}

func (m *methodPointers) Handle(_ context.Context, req *cborrpc.Request) (any, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seen[req.Method] = append(m.seen[req.Method], unsafe.StringData(req.Method))
	return nil, nil
}

// cborrpc interns the method names it knows so that parsing a request
// allocates none for them (cborrpc/request.go, methodNames); every method
// of the table must be among them. An interned name is one string shared
// by all requests: two requests for it see the same bytes.
func TestCborrpcInternsEveryMethod(t *testing.T) {
	js, _ := newMemoryServer(t, Config{})
	h := &methodPointers{seen: map[string][]*byte{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := cborrpc.NewServer(h, cborrpc.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	c, err := cborrpc.Dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 2 {
		for _, m := range js.Methods() {
			if _, err := c.Call(m); err != nil {
				t.Fatalf("%s: %v", m, err)
			}
		}
	}
	for _, m := range js.Methods() {
		if p := h.seen[m]; len(p) != 2 || p[0] != p[1] {
			t.Errorf("cborrpc does not intern the method name %s", m)
		}
	}
}
