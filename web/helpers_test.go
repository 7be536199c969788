package web

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/pgtest"
	"github.com/coordinated/coordinated/jobserver"
	"github.com/coordinated/coordinated/memory"
	"github.com/coordinated/coordinated/postgres"
)

// fixture is a daemon in miniature: a backend, the legacy RPC server (with
// the web package's RPC metrics) on a loopback port, and the HTTP side.
type fixture struct {
	t       testing.TB
	ctx     context.Context
	backend coordinate.Backend
	ns      coordinate.Namespace
	web     *Server
	http    *httptest.Server
	rpc     *cborrpc.Client
}

type fixtureOpts struct {
	postgres bool
	dataDir  string // persistent memory backend
	actions  bool
	token    string
	labels   int
	// scrapeTimeout is Options.ScrapeTimeout (0: the default).
	scrapeTimeout time.Duration
}

func newFixture(t testing.TB, o fixtureOpts) *fixture {
	t.Helper()
	ctx := context.Background()
	var b coordinate.Backend
	switch {
	case o.postgres:
		u, _ := pgtest.FreshSchema(t, "web")
		pb, err := postgres.New(ctx, u, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b = pb
	case o.dataDir != "":
		mb, err := memory.Open(ctx, memory.Options{DataDir: o.dataDir, Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		b = mb
	default:
		b = memory.New(memory.Options{})
	}
	t.Cleanup(func() { b.Close() })
	ns, err := b.Namespace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ws := New(Options{Namespace: ns, Backend: b, Actions: o.actions, Token: o.token, MaxSpecLabels: o.labels,
		ScrapeTimeout: o.scrapeTimeout, Logger: quietLog()})
	hs := httptest.NewServer(ws)
	t.Cleanup(hs.Close)
	js := jobserver.New(ns, jobserver.Config{Logger: quietLog()})
	srv := cborrpc.NewServer(ws.RPCHandler(js, js.HasMethod), cborrpc.ServerOptions{Logger: quietLog()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	})
	c, err := cborrpc.Dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &fixture{t: t, ctx: ctx, backend: b, ns: ns, web: ws, http: hs, rpc: c}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// call makes a legacy RPC and fails the test on a transport error.
func (f *fixture) call(method string, params ...any) any {
	f.t.Helper()
	res, err := f.rpc.Call(method, params...)
	if err != nil {
		f.t.Fatalf("%s: %v", method, err)
	}
	return res
}

// spec defines a work spec through the RPC.
func (f *fixture) spec(def map[string]any) {
	f.t.Helper()
	f.call("set_work_spec", def)
}

// add adds units with the given keys (and empty data) through the RPC.
func (f *fixture) add(spec string, keys ...string) {
	f.t.Helper()
	items := make([]any, len(keys))
	for i, k := range keys {
		items[i] = []any{k, map[string]any{}}
	}
	f.call("add_work_units", spec, items)
}

// rpcCounts is count_work_units through the RPC, by status code.
func (f *fixture) rpcCounts(spec string) map[int]int {
	f.t.Helper()
	res := f.call("count_work_units", spec)
	pair, ok := res.(cborrpc.Tuple)
	if !ok || len(pair) != 2 {
		f.t.Fatalf("count_work_units(%s) = %#v", spec, res)
	}
	out := map[int]int{}
	m, _ := pair[0].(map[any]any)
	for k, v := range m {
		out[int(toInt(k))] = int(toInt(v))
	}
	return out
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case uint64:
		return int64(x)
	case int64:
		return x
	}
	return -1
}

// get fetches a path and returns the status and body.
func (f *fixture) get(path string) (int, string) {
	f.t.Helper()
	resp, err := http.Get(f.http.URL + path)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// post submits a form without following redirects.
func (f *fixture) post(path string, form url.Values, header http.Header) (int, string) {
	f.t.Helper()
	req, _ := http.NewRequest("POST", f.http.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
