package web

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// refailing is a namespace whose units fail again the first time they are
// retried, as if a worker took each at once and failed it; it counts the
// retries of each key, through UpdateWorkUnit or RetryWorkUnits.
type refailing struct {
	coordinate.Namespace
	spec    string
	retries map[string]int
}

func (r *refailing) retried(ctx context.Context, key string) error {
	r.retries[key]++
	if r.retries[key] > 1 {
		return nil
	}
	return r.Namespace.UpdateWorkUnit(ctx, r.spec, key, coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed})
}

func (r *refailing) UpdateWorkUnit(ctx context.Context, spec, key string, upd coordinate.WorkUnitUpdate) error {
	if err := r.Namespace.UpdateWorkUnit(ctx, spec, key, upd); err != nil || upd.Status != coordinate.StatusAvailable {
		return err
	}
	return r.retried(ctx, key)
}

func (r *refailing) RetryWorkUnits(ctx context.Context, spec string, keys []string) (int, error) {
	before, err := r.Namespace.GetWorkUnits(ctx, spec, keys)
	if err != nil {
		return 0, err
	}
	n, err := r.Namespace.RetryWorkUnits(ctx, spec, keys)
	for _, u := range before {
		if u != nil && u.Status == coordinate.StatusFailed && err == nil {
			err = r.retried(ctx, u.Key.Bytes)
		}
	}
	return n, err
}

// "Retry" of more failed units than one page retries each exactly once,
// on both backends, although every unit retried fails again at once.
func TestRetryFailedEachOnce(t *testing.T) {
	for _, pg := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "postgres"}[pg], func(t *testing.T) {
			f := newFixture(t, fixtureOpts{postgres: pg, actions: true})
			f.spec(map[string]any{"name": "s"})
			var keys []string
			for i := range 7 {
				keys = append(keys, fmt.Sprintf("k%d", i))
			}
			f.add("s", keys...)
			f.add("s", "ok")
			for _, k := range keys {
				f.call("update_work_unit", "s", k, map[string]any{"status": int(coordinate.StatusFailed)})
			}
			rf := &refailing{Namespace: f.ns, spec: "s", retries: map[string]int{}}
			f.web.ns = rf
			f.web.retryPage = 3
			form := url.Values{"action": {"retry"}, "spec": {"s"}, "csrf": {f.web.csrf}, "return": {"/ui/spec?name=s"}}
			code, body := f.post("/ui/action", form, nil)
			if code != http.StatusSeeOther {
				t.Fatalf("retry: %d %s", code, body)
			}
			for _, k := range keys {
				if rf.retries[k] != 1 {
					t.Errorf("unit %s retried %d times, want once (all: %v)", k, rf.retries[k], rf.retries)
				}
			}
			if rf.retries["ok"] != 0 {
				t.Errorf("the available unit was retried")
			}
			if n := f.rpcCounts("s")[int(coordinate.StatusFailed)]; n != len(keys) {
				t.Errorf("%d failed units after the retry, want %d (each failed again)", n, len(keys))
			}
		})
	}
}

// The unit page's retry (shown for a FAILED unit) leaves alone a unit
// that is no longer FAILED when the form arrives: a lease taken since the
// page was drawn stays, and the unit does not run twice.
func TestStaleRetryLeavesALeasedUnit(t *testing.T) {
	f := newFixture(t, fixtureOpts{actions: true})
	f.spec(map[string]any{"name": "s"})
	f.add("s", "u")
	if _, err := f.ns.GetWork(f.ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w"}, LeaseTime: time.Hour, MaxJobs: 1}); err != nil {
		t.Fatal(err)
	}
	form := url.Values{"action": {"retry"}, "spec": {"s"}, "key": {"u"}, "csrf": {f.web.csrf}}
	f.post("/ui/action", form, nil)
	us, err := f.ns.GetWorkUnits(f.ctx, "s", []string{"u"})
	if err != nil || len(us) != 1 || us[0].Status != coordinate.StatusPending || us[0].Worker == nil {
		t.Fatalf("a stale retry of a leased unit left %+v %v, want it still pending with its worker", us, err)
	}
	// A failed unit is retried.
	f.call("update_work_unit", "s", "u", map[string]any{"status": 5})
	f.post("/ui/action", form, nil)
	if us, err := f.ns.GetWorkUnits(f.ctx, "s", []string{"u"}); err != nil || len(us) != 1 || us[0].Status != coordinate.StatusAvailable {
		t.Errorf("retry of a failed unit left %+v %v, want it available", us, err)
	}
}

// asBrowser is what a browser submits for a form field whose value
// attribute held v: it decodes the page as UTF-8 (a bad byte becomes
// U+FFFD), its parser turns CR LF and CR into LF and NUL into U+FFFD, and
// the submission sends every line break as CR LF.
func asBrowser(v string) string {
	v = html.UnescapeString(strings.ToValidUTF8(v, "\uFFFD"))
	v = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\x00", "\uFFFD").Replace(v)
	return strings.ReplaceAll(v, "\n", "\r\n")
}

// submit posts the form of page holding the button with id button, as a
// browser would, with the given visible fields.
func (f *fixture) submit(page, button string, fields url.Values) (int, string) {
	f.t.Helper()
	for _, form := range regexp.MustCompile(`(?s)<form[^>]*method="post".*?</form>`).FindAllString(page, -1) {
		if !strings.Contains(form, `id="`+button+`"`) {
			continue
		}
		v := url.Values{}
		for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(form, -1) {
			v.Set(m[1], asBrowser(m[2]))
		}
		m := regexp.MustCompile(`<button id="` + button + `" name="action" value="([^"]+)"`).FindStringSubmatch(form)
		v.Set("action", m[1])
		for k, vs := range fields {
			v[k] = vs
		}
		return f.post("/ui/action", v, nil)
	}
	f.t.Fatalf("no form with button %s", button)
	return 0, ""
}

// The unit page's forms act on the unit shown whatever bytes its key and
// its spec's name hold: keys are byte strings, and a key that is not
// UTF-8 or holds NUL or a lone line break came back from the browser
// changed, so "set priority" set nothing (and said "priority set") and
// "retry" retried nothing.
func TestActionsOnAnyKey(t *testing.T) {
	f := newFixture(t, fixtureOpts{actions: true})
	spec := "s"
	f.spec(map[string]any{"name": spec})
	keys := []string{"k\xff", "k\x00", "a\nb", "c\rd", "e\r\nf", "g h"}
	items := make([]any, len(keys))
	for i, k := range keys {
		items[i] = []any{[]byte(k), map[string]any{}}
	}
	f.call("add_work_units", spec, items)
	for _, k := range keys {
		_, page := f.get("/ui/unit" + string(queryString("spec", spec, "key", k)))
		if code, body := f.submit(page, "prioritize", url.Values{"priority": {"7"}}); code != http.StatusSeeOther {
			t.Errorf("set priority of %q: %d %.200s", k, code, body)
		}
		if us, err := f.ns.GetWorkUnits(f.ctx, spec, []string{k}); err != nil || us[0] == nil || us[0].Priority != 7 {
			t.Errorf("set priority of %q did not set it", k)
		}
		if err := f.ns.UpdateWorkUnit(f.ctx, spec, k, coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed}); err != nil {
			t.Fatal(err)
		}
		_, page = f.get("/ui/unit" + string(queryString("spec", spec, "key", k)))
		f.submit(page, "retry", nil)
		if us, _ := f.ns.GetWorkUnits(f.ctx, spec, []string{k}); us[0].Status != coordinate.StatusAvailable {
			t.Errorf("retry of %q left it %v", k, us[0].Status)
		}
	}
	bytesSpec := "s\xff"
	f.call("set_work_spec", map[string]any{"name": []byte(bytesSpec)})
	_, page := f.get("/ui/spec" + string(queryString("name", bytesSpec)))
	f.submit(page, "pause", nil)
	if ws, _ := f.ns.WorkSpec(f.ctx, bytesSpec); !ws.Meta.Paused {
		t.Errorf("pause on the page of spec %q did not pause it", bytesSpec)
	}
}

// Setting the priority of a unit that does not exist (deleted since the
// page was drawn) says so instead of "priority set".
func TestPrioritizeMissingUnit(t *testing.T) {
	f := newFixture(t, fixtureOpts{actions: true})
	f.spec(map[string]any{"name": "s"})
	form := url.Values{"action": {"prioritize"}, "spec": {"s"}, "key": {"gone"}, "priority": {"3"}, "csrf": {f.web.csrf}}
	if code, body := f.post("/ui/action", form, nil); code != http.StatusBadRequest {
		t.Errorf("prioritize of a missing unit: %d %s, want 400", code, body)
	}
	// Deleted between a read and the write: the answer comes from the
	// write itself, so a read that still saw the unit cannot make it
	// "priority set".
	f.add("s", "gone")
	f.web.ns = staleReads{f.ns, &coordinate.WorkUnit{Spec: coordinate.Name{Bytes: "s"}, Key: coordinate.Name{Bytes: "gone", Text: true}}}
	if _, err := f.ns.DeleteWorkUnits(f.ctx, "s", coordinate.DeleteQuery{Keys: []string{"gone"}}); err != nil {
		t.Fatal(err)
	}
	if code, body := f.post("/ui/action", form, nil); code != http.StatusBadRequest {
		t.Errorf("prioritize of a unit deleted after it was read: %d %s, want 400", code, body)
	}
}

// staleReads is a namespace whose GetWorkUnits still returns a unit that
// has been deleted since.
type staleReads struct {
	coordinate.Namespace
	unit *coordinate.WorkUnit
}

func (s staleReads) GetWorkUnits(context.Context, string, []string) ([]*coordinate.WorkUnit, error) {
	return []*coordinate.WorkUnit{s.unit}, nil
}
