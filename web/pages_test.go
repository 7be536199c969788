package web

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/coordinated/coordinated/coordinate"
)

// Every page renders on both backends with units in every state (the
// browser tests drive the memory backend; this covers the PostgreSQL
// paths: Stats, GroupUnits, WorkerUnits and the listings).
func TestPagesBothBackends(t *testing.T) {
	for _, pg := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "postgres"}[pg], func(t *testing.T) {
			f := newFixture(t, fixtureOpts{postgres: pg, actions: true})
			f.everyState()
			f.spec(map[string]any{"name": "chain", "then": "next"})
			f.spec(map[string]any{"name": "next"})
			f.add("chain", "c1")
			f.call("update_work_unit", "chain", "c1", map[string]any{"status": 4, "data": map[string]any{"output": []any{"o1", "o2"}}})
			for _, c := range []struct{ path, want string }{
				{"/", "<td>work</td>"},
				{"/?ws=work&wus=3", "w1"},
				{"/ui/", `data-spec="big"`},
				{"/ui/spec?name=big&status=available&offset=9900", "u09999"},
				{"/ui/spec?name=big&prefix=u0999", "u09990"},
				{"/ui/spec?name=work&status=failed", "grandchild"},
				{"/ui/unit?spec=work&key=bad", "ValueError: boom"},
				{"/ui/unit?spec=work&key=waiting", "work/avail"},
				{"/ui/workers", "work/lease"},
				{"/ui/unit?spec=chain&key=c1", `href="/ui/unit?key=o2&amp;spec=next"`},
				{"/ui/spec?name=next", "o1"},
				{"/ui/groups", "no stalled groups"},
				{"/ui/group?name=g", `class="node st-failed failed-root"`},
			} {
				code, body := f.get(c.path)
				if code != 200 || !strings.Contains(body, c.want) {
					t.Errorf("GET %s: %d, want 200 with %q", c.path, code, c.want)
				}
			}
			for _, c := range []struct {
				path string
				code int
			}{
				{"/ui/spec?name=nope", 404},
				{"/ui/unit?spec=work&key=nope", 404},
				{"/?ws=work&wus=9", 400},
			} {
				if code, _ := f.get(c.path); code != c.code {
					t.Errorf("GET %s: %d, want %d", c.path, code, c.code)
				}
			}
		})
	}
}

// Key search pages on: the cursor (after) is inclusive in the listing and
// dropped from the page, so every page, not just the first, knows whether
// another follows (page 2 of k00..k09 by 3 had no "next").
func TestKeySearchPagesToTheEnd(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.spec(map[string]any{"name": "s"})
	var keys []string
	for i := range 10 {
		keys = append(keys, fmt.Sprintf("k%02d", i))
	}
	f.add("s", keys...)
	var seen []string
	after := ""
	for page := 0; page < 6; page++ {
		_, body := f.get("/ui/spec?name=s&prefix=k&n=3&after=" + after)
		for _, k := range keys {
			if strings.Contains(body, ">"+k+"<") {
				seen = append(seen, k)
			}
		}
		m := regexp.MustCompile(`id="next" href="[^"]*after=(k\d\d)`).FindStringSubmatch(body)
		if m == nil {
			break
		}
		after = m[1]
	}
	if strings.Join(seen, ",") != strings.Join(keys, ",") {
		t.Errorf("paging by key showed %v, want every key once in order", seen)
	}
}

// A unit keyed "0" (or a spec named "0") is linked with its key: links
// leave out only an offset of 0.
func TestLinksKeepZero(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.spec(map[string]any{"name": "s"})
	f.add("s", "0", "1")
	_, body := f.get("/ui/spec?name=s")
	for _, link := range []string{`/ui/unit?key=1&amp;spec=s`, `/ui/unit?key=0&amp;spec=s`} {
		if !strings.Contains(body, link) {
			t.Errorf("the spec page lacks the link %s", link)
		}
	}
	if code, _ := f.get("/ui/unit?spec=s&key=0"); code != http.StatusOK {
		t.Errorf("unit 0's page: HTTP %d", code)
	}
}

// limitRecorder notes the largest Limit a listing asked the backend for.
type limitRecorder struct {
	coordinate.Namespace
	max int
}

func (l *limitRecorder) ListWorkUnits(ctx context.Context, spec string, q coordinate.WorkUnitQuery) ([]*coordinate.WorkUnit, error) {
	l.max = max(l.max, q.Limit)
	return l.Namespace.ListWorkUnits(ctx, spec, q)
}

// A listing by status pages by offset, and each page reads offset+n
// units in priority order: on the memory backend, past a few thousand,
// a walk and a sort of that many units with the namespace locked (at
// 1,000,000 AVAILABLE units, offset=999000 held every RPC for about a
// second). Any reader could ask for that; the offset is now bounded, and
// the last page reachable says no page follows rather than linking to
// itself.
func TestListOffsetBounded(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	rec := &limitRecorder{Namespace: f.ns}
	f.web.ns = rec
	f.spec(map[string]any{"name": "s"})
	keys := make([]string, 0, 20000)
	for i := range cap(keys) {
		keys = append(keys, fmt.Sprintf("u%06d", i))
	}
	f.add("s", keys...)
	// What the memory backend lists from its heaps in one short lock hold
	// (memory.heapScanMax).
	const cheap = 16 * 4096
	for _, p := range []string{"/ui/spec?name=s&status=available&n=1000&offset=1000000", "/?ws=s&wus=1&offset=1000000"} {
		code, body := f.get(p)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", p, code)
		}
		if rec.max > cheap {
			t.Errorf("GET %s read %d units", p, rec.max)
		}
		if strings.Contains(body, `id="next"`) {
			t.Errorf("GET %s links to a next page past the offset bound", p)
		}
	}
}
