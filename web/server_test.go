package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/memory"
)

// notReady is a backend whose coordinate.ReadyChecker says no.
type notReady struct {
	*memory.Backend
	err error
}

func (b notReady) Ready(context.Context) error { return b.err }

// readyz fetches /readyz from a server on backend b.
func readyz(t *testing.T, b coordinate.Backend) (int, string) {
	t.Helper()
	ns, err := b.Namespace(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	New(Options{Namespace: ns, Backend: b, Logger: quietLog()}).ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	return rec.Code, rec.Body.String()
}

func TestProbes(t *testing.T) {
	f := newFixture(t, fixtureOpts{dataDir: t.TempDir()})
	if code, body := f.get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := f.get("/readyz"); code != 200 {
		t.Errorf("/readyz = %d %q, want 200", code, body)
	}
	if code, _ := f.get("/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("pprof served without -httpd-pprof: %d", code)
	}
	// /readyz answers what the backend's coordinate.ReadyChecker says.
	mb := memory.New(memory.Options{})
	if code, body := readyz(t, mb); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz on a volatile memory backend = %d %q, want 200", code, body)
	}
	down := errors.New("the journal failed")
	if code, body := readyz(t, notReady{mb, down}); code != http.StatusServiceUnavailable || body != "not ready: the backend is not ready (details in the daemon's log)\n" {
		t.Errorf("/readyz on a backend that is not ready = %d %q, want 503 with a generic reason", code, body)
	}
}

// /readyz needs no token, so a backend's error, which for PostgreSQL names
// the database's user, host and port, goes to the log, not the answer.
func TestReadyzKeepsTheErrorInTheLog(t *testing.T) {
	// pgconn's form, as pgx.Connect returns it for a refused connection.
	const secret = "failed to connect to `user=alice database=coordinate`:\n\t10.9.8.7:6543 (db.internal): dial error: dial tcp 10.9.8.7:6543: connect: connection refused"
	for _, tc := range []struct {
		name   string
		err    error
		reason string
	}{
		{"unavailable", fmt.Errorf("%w: the PostgreSQL server did not answer within 5s: %s", coordinate.ErrUnavailable, secret), "storage unavailable"},
		{"other", errors.New(secret), "the backend is not ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := notReady{memory.New(memory.Options{}), tc.err}
			ns, err := b.Namespace(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			rec := httptest.NewRecorder()
			New(Options{Namespace: ns, Backend: b, Logger: slog.New(slog.NewTextHandler(&log, nil))}).
				ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
			body := rec.Body.String()
			if rec.Code != http.StatusServiceUnavailable || body != "not ready: "+tc.reason+" (details in the daemon's log)\n" {
				t.Errorf("/readyz = %d %q, want 503 with reason %q", rec.Code, body, tc.reason)
			}
			for _, leak := range []string{"alice", "10.9.8.7", "6543", "db.internal"} {
				if strings.Contains(body, leak) {
					t.Errorf("/readyz answer shows %q: %q", leak, body)
				}
			}
			if !strings.Contains(log.String(), "user=alice") || !strings.Contains(log.String(), "10.9.8.7:6543") {
				t.Errorf("the log lacks the backend's error:\n%s", log.String())
			}
		})
	}
}

// TestReadyzPostgres: /readyz asks the PostgreSQL backend's liveness
// check (its coordinate.ReadyChecker).
func TestReadyzPostgres(t *testing.T) {
	f := newFixture(t, fixtureOpts{postgres: true})
	if _, ok := f.web.opts.Backend.(coordinate.ReadyChecker); !ok {
		t.Fatalf("the PostgreSQL backend %T is no coordinate.ReadyChecker", f.web.opts.Backend)
	}
	if code, body := f.get("/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz = %d %q, want 200", code, body)
	}
}

func TestActionGuards(t *testing.T) {
	off := newFixture(t, fixtureOpts{})
	off.spec(map[string]any{"name": "a"})
	form := url.Values{"action": {"pause"}, "spec": {"a"}, "csrf": {off.web.csrf}}
	if code, body := off.post("/ui/action", form, nil); code != http.StatusForbidden || !strings.Contains(body, "actions are disabled") {
		t.Errorf("action with actions off: %d", code)
	}

	on := newFixture(t, fixtureOpts{actions: true, token: "s3cret"})
	on.spec(map[string]any{"name": "a"})
	form = url.Values{"action": {"pause"}, "spec": {"a"}, "csrf": {on.web.csrf}, "return": {"https://evil.example/x"}}
	if code, _ := on.post("/ui/action", form, nil); code != http.StatusUnauthorized {
		t.Errorf("action without the token: %d, want 401", code)
	}
	bearer := http.Header{"Authorization": {"Bearer s3cret"}}
	bad := url.Values{"action": {"pause"}, "spec": {"a"}, "csrf": {"forged"}}
	if code, _ := on.post("/ui/action", bad, bearer); code != http.StatusForbidden {
		t.Errorf("action with a forged CSRF token: %d, want 403", code)
	}
	if ws, _ := on.ns.WorkSpec(on.ctx, "a"); ws.Meta.Paused {
		t.Fatal("a refused action paused the spec")
	}
	req, _ := http.NewRequest("POST", "/", nil)
	req.SetBasicAuth("anyone", "s3cret")
	basic := http.Header{"Authorization": req.Header["Authorization"]}
	code, _ := on.post("/ui/action", form, basic)
	if ws, _ := on.ns.WorkSpec(on.ctx, "a"); code != http.StatusSeeOther || !ws.Meta.Paused {
		t.Errorf("authorized pause: %d, paused %v", code, ws.Meta.Paused)
	}
	form.Set("action", "prioritize")
	form.Set("priority", "high")
	if code, _ := on.post("/ui/action", form, bearer); code != http.StatusBadRequest {
		t.Errorf("prioritize with priority %q: %d, want 400", "high", code)
	}
}

// The redirect after an action stays on this site.
func TestActionRedirectLocal(t *testing.T) {
	f := newFixture(t, fixtureOpts{actions: true})
	f.spec(map[string]any{"name": "a"})
	for _, ret := range []string{"https://evil.example/x", "//evil.example/x", ""} {
		form := url.Values{"action": {"resume"}, "spec": {"a"}, "csrf": {f.web.csrf}, "return": {ret}}
		req, _ := http.NewRequest("POST", f.http.URL+"/ui/action", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "/ui/?flash=") {
			t.Errorf("return %q redirected to %q", ret, loc)
		}
	}
}

// The form token is no secret from whoever can read a page, and pages need
// no token: a reader could forge a form on another site that an operator's
// browser, holding the basic-auth password, posts with it. Cross-origin
// posts are refused (Sec-Fetch-Site, Origin); the dashboard's own pass.
func TestActionCrossOrigin(t *testing.T) {
	f := newFixture(t, fixtureOpts{actions: true, token: "s3cret"})
	f.spec(map[string]any{"name": "a"})
	_, page := f.get("/ui/") // no credentials needed to read
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no form token on /ui/")
	}
	form := url.Values{"action": {"pause"}, "spec": {"a"}, "csrf": {m[1]}}
	req, _ := http.NewRequest("POST", "/", nil)
	req.SetBasicAuth("anyone", "s3cret")
	auth := req.Header.Get("Authorization")
	for _, h := range []http.Header{
		{"Authorization": {auth}, "Origin": {"https://evil.example"}, "Sec-Fetch-Site": {"cross-site"}},
		{"Authorization": {auth}, "Origin": {"https://evil.example"}},
		{"Authorization": {auth}, "Sec-Fetch-Site": {"same-site"}},
	} {
		if code, _ := f.post("/ui/action", form, h); code != http.StatusForbidden {
			t.Errorf("cross-origin action %v: %d, want 403", h, code)
		}
	}
	if ws, _ := f.ns.WorkSpec(f.ctx, "a"); ws.Meta.Paused {
		t.Fatal("a cross-origin form paused the spec")
	}
	same := http.Header{"Authorization": {auth}, "Origin": {f.http.URL}, "Sec-Fetch-Site": {"same-origin"}}
	if code, _ := f.post("/ui/action", form, same); code != http.StatusSeeOther {
		t.Errorf("same-origin action: %d, want 303", code)
	}
	if ws, _ := f.ns.WorkSpec(f.ctx, "a"); !ws.Meta.Paused {
		t.Error("the same-origin pause did nothing")
	}
}

// Without a token, an action is accepted only at an IP address or
// localhost: a page whose DNS name was rebound to the daemon's address is
// same-origin to the browser, but its Host header names its own domain.
func TestActionRebindingHost(t *testing.T) {
	for _, token := range []string{"", "s3cret"} {
		f := newFixture(t, fixtureOpts{actions: true, token: token})
		f.spec(map[string]any{"name": "a"})
		_, page := f.get("/ui/")
		m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
		if m == nil {
			t.Fatal("no form token on /ui/")
		}
		post := func(host string) int {
			form := url.Values{"action": {"pause"}, "spec": {"a"}, "csrf": {m[1]}}
			req, _ := http.NewRequest("POST", f.http.URL+"/ui/action", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			req.Host = host
			req.Header.Set("Origin", "http://"+host)
			if token != "" {
				req.SetBasicAuth("anyone", token)
			}
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		port := f.http.URL[strings.LastIndexByte(f.http.URL, ':'):]
		if token == "" {
			if code := post("rebound.example" + port); code != http.StatusForbidden {
				t.Errorf("no token, Host a DNS name: %d, want 403", code)
			}
			if ws, _ := f.ns.WorkSpec(f.ctx, "a"); ws.Meta.Paused {
				t.Fatal("a rebound page paused the spec")
			}
			for _, host := range []string{"localhost" + port, "127.0.0.1" + port, "[::1]" + port} {
				if code := post(host); code != http.StatusSeeOther {
					t.Errorf("no token, Host %s: %d, want 303", host, code)
				}
			}
			continue
		}
		if code := post("coordinated.example" + port); code != http.StatusSeeOther {
			t.Errorf("with the token, Host a DNS name: %d, want 303", code)
		}
	}
}
