package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/coordinated/coordinated/cborrpc"
)

func TestHTTPDAddr(t *testing.T) {
	for in, want := range map[string]string{
		":5933":         "127.0.0.1:5933",
		"5933":          "127.0.0.1:5933",
		"0.0.0.0:5933":  "0.0.0.0:5933",
		"[::1]:5933":    "[::1]:5933",
		"10.1.2.3:8080": "10.1.2.3:8080",
	} {
		if got, err := httpdAddr(in); err != nil || got != want {
			t.Errorf("httpdAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := httpdAddr("nonsense"); err == nil {
		t.Errorf("httpdAddr(nonsense) accepted")
	}
}

// The daemon serves the web package on --httpd, with RPC and connection
// metrics from its own listener.
func TestDaemonHTTPD(t *testing.T) {
	addr, logs, stop := startDaemon(t, "-httpd", "127.0.0.1:0", "-httpd-pprof")
	m := regexp.MustCompile(`msg="http listening" addr=(\S+)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no http listening line in the log:\n%s", logs.String())
	}
	base := "http://" + m[1]
	c, err := cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call("set_work_spec", map[string]any{"name": "ws"}); err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/readyz"); code != 200 {
		t.Errorf("/readyz = %d %s", code, body)
	}
	_, metrics := get("/metrics")
	for _, want := range []string{
		`coordinated_rpc_duration_seconds_count{method="set_work_spec"} 1`,
		`coordinated_connections_open 1`,
		`coordinated_work_units{spec="ws",status="available"} 0`,
		`coordinated_journal_records_total`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if code, body := get("/"); code != 200 || !strings.Contains(body, "<td>ws</td>") {
		t.Errorf("/ = %d, without the spec row", code)
	}
	if code, _ := get("/debug/pprof/"); code != 200 {
		t.Errorf("/debug/pprof/ with -httpd-pprof = %d", code)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
