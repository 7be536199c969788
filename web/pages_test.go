package web

import (
	"strings"
	"testing"
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
