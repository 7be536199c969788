package jobserver

import (
	"context"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/pyvalue"
)

func testUnknownAndRefusedMethods(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	for _, name := range []string{"snapshot", "maybe_periodic_snapshot", "load_snapshot", "wsgi", "foo", "GetWork", ""} {
		got := callErr(t, js, name)
		if want := "AttributeError(\"no such method " + pyvalue.ReprBytes(name) + "\",)\n"; got != want {
			t.Errorf("%q: %q, want %q", name, got, want)
		}
	}
}

func testParameterCounts(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	if got := callErr(t, js, "get_work", b("w")); !strings.Contains(got, "get_work() takes exactly 2 arguments (1 given)") {
		t.Errorf("missing param: %q", got)
	}
	if got := callErr(t, js, "clear", 1); !strings.HasPrefix(got, "TypeError(") {
		t.Errorf("extra param: %q", got)
	}
	if got := callErr(t, js, "get_work", 5, m{}); !strings.Contains(got, "worker_id must be a string") {
		t.Errorf("wrong type: %q", got)
	}
}

func testKeywordParams(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	req := &cborrpc.Request{Method: "get_work", NamedParams: map[string]cbor.RawMessage{
		"worker_id": rawOf(t, b("w")),
		"options":   rawOf(t, m{"max_jobs": 2}),
	}}
	res, err := js.Handle(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "keyword call", diag(t, res), `128([[], null])`)
}

func testGetConfig(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	expect(t, "no config", call(t, js, "get_config"), `128([{}, null])`)
	data, policy, err := LoadYAMLConfig([]byte("coordinate:\n  job_queue:\n    limit_completed_count: 5\nname: fü\nlist: [1, 2.5, x]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if policy == nil || policy.MaxCount != 5 || policy.MaxAge != 0 {
		t.Errorf("policy = %+v", policy)
	}
	js, _ = newServer(t, Config{ServerConfig: data})
	expect(t, "config", call(t, js, "get_config"),
		`128([{'list': [1, 2.5, 'x'], 'name': "f\u00fc", 'coordinate': {'job_queue': {'limit_completed_count': 5}}}, null])`)
}
