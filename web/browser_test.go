package web

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/coordinated/coordinated/coordinate"
)

// The dashboard and the status page in a real headless Chromium (Debian's
// chromium package; scripts/test.sh installs it), driven with chromedp so
// that the test command needs no Node toolchain. Screenshots go to
// $COORDINATE_TEST_ARTIFACTS (default: a coordinated-artifacts directory
// in the system temp dir).

const chromiumPath = "/usr/bin/chromium"

func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath
	if p := os.Getenv("COORDINATE_TEST_CHROMIUM"); p != "" {
		path = p
	}
	if _, err := exec.LookPath(path); err != nil {
		t.Fatalf("headless Chromium not found at %s (apt-get install -y chromium; scripts/test.sh does): %v", path, err)
	}
	// Not t.TempDir: Chromium may still be writing its profile as it exits.
	profile, err := os.MkdirTemp("", "coordinated-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(profile),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc(); os.RemoveAll(profile) })
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

func artifactsDir(t *testing.T) string {
	dir := os.Getenv("COORDINATE_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "coordinated-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func run(t *testing.T, ctx context.Context, actions ...chromedp.Action) {
	t.Helper()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var png []byte
	run(t, ctx, chromedp.FullScreenshot(&png, 100)) // 100: PNG (lower is JPEG)
	path := filepath.Join(artifactsDir(t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
}

const boom = "Traceback (most recent call last):\n  File \"job.py\", line 3, in run\nValueError: boom"

// everyState loads specs with units in every status, a paused and a
// continuous spec, a group with a failed root, and 10,000 units in "big".
func (f *fixture) everyState() {
	f.t.Helper()
	ctx, ns := f.ctx, f.ns
	f.spec(map[string]any{"name": "big"})
	f.spec(map[string]any{"name": "work"})
	f.spec(map[string]any{"name": "idle", "continuous": true})
	f.spec(map[string]any{"name": "held"})
	for i := 0; i < 10_000; i += 1000 {
		in := make([]coordinate.WorkUnitInput, 1000)
		for j := range in {
			in[j] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("u%05d", i+j), Text: true}, Data: coordinate.EmptyMap}
		}
		if err := ns.AddWorkUnits(ctx, "big", in); err != nil {
			f.t.Fatal(err)
		}
	}
	unit := func(k, group string, deps ...string) coordinate.WorkUnitInput {
		in := coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: k, Text: true}, Data: coordinate.EmptyMap, Group: group}
		for _, d := range deps {
			in.DependsOn = append(in.DependsOn, coordinate.UnitRef{Spec: "work", Key: d})
		}
		return in
	}
	must := func(err error) {
		f.t.Helper()
		if err != nil {
			f.t.Fatal(err)
		}
	}
	must(ns.AddWorkUnits(ctx, "work", []coordinate.WorkUnitInput{
		unit("avail", ""), unit("lease", ""), unit("done", ""), unit("bad", ""),
		unit("root", "g"), unit("child", "g", "root"), unit("grandchild", "g", "child"), unit("side", "g"),
		unit("waiting", "", "avail"),
	}))
	p := 5.0
	_, err := ns.PrioritizeWorkUnits(ctx, "work", []string{"lease"}, &p, 0)
	must(err)
	must(ns.WorkerHeartbeat(ctx, coordinate.Heartbeat{Worker: coordinate.Name{Bytes: "w1", Text: true}, Mode: coordinate.TextData("run"), Data: coordinate.EmptyMap, Expire: time.Hour}))
	as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w1", Text: true}, LeaseTime: time.Hour, WorkSpecs: []string{"work"}})
	if err != nil || len(as) != 1 || as[0].Key.Bytes != "lease" {
		f.t.Fatalf("GetWork = %v, %v; want the lease unit", as, err)
	}
	must(ns.UpdateWorkUnit(ctx, "work", "done", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}))
	must(ns.UpdateWorkUnit(ctx, "work", "bad", coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed, Data: coordinate.WithTraceback(coordinate.EmptyMap, boom)}))
	must(ns.UpdateWorkUnit(ctx, "work", "root", coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed, Data: coordinate.WithTraceback(coordinate.EmptyMap, boom)}))
	must(ns.ControlWorkSpec(ctx, "held", coordinate.WorkSpecControl{Paused: ptr(true)}))
	must(ns.ControlWorkSpec(ctx, "idle", coordinate.WorkSpecControl{Continuous: ptr(true)}))
}

func TestBrowserDashboard(t *testing.T) {
	f := newFixture(t, fixtureOpts{actions: true})
	f.everyState()
	ctx := browser(t)
	base := f.http.URL

	// The spec list agrees with count_work_units over the RPC.
	var table map[string]map[string]int
	run(t, ctx, chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible("#specs"),
		chromedp.Evaluate(`Object.fromEntries(Array.from(document.querySelectorAll("#specs tr[data-spec]")).map(tr =>
			[tr.dataset.spec, Object.fromEntries(Array.from(tr.querySelectorAll("td[data-status]")).map(td => [td.dataset.status, +td.textContent]))]))`, &table))
	screenshot(t, ctx, "dashboard-specs")
	for _, spec := range []string{"big", "work", "idle", "held"} {
		rpc := f.rpcCounts(spec)
		for _, st := range allStatuses {
			if got := table[spec][st.String()]; got != rpc[int(st)] {
				t.Errorf("dashboard %s %s = %d, count_work_units says %d", spec, st, got, rpc[int(st)])
			}
		}
	}
	if c := f.rpcCounts("work"); len(c) != 5 {
		t.Errorf("spec work has units in %d statuses, want all 5: %v", len(c), c)
	}
	var heldRow, idleRow string
	run(t, ctx, chromedp.Text(`tr[data-spec="held"]`, &heldRow), chromedp.Text(`tr[data-spec="idle"]`, &idleRow))
	if !strings.Contains(heldRow, "paused") || !strings.Contains(idleRow, "continuous") {
		t.Errorf("flags: held row %q, idle row %q; want paused and continuous badges", heldRow, idleRow)
	}

	// Page through the 10,000 available units of big, 1,000 at a time.
	seen := map[string]bool{}
	run(t, ctx, chromedp.Navigate(base+"/ui/spec?name=big&status=available&n=1000"), chromedp.WaitVisible("#units"))
	for pages := 1; ; pages++ {
		var keys []string
		var hasNext bool
		run(t, ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll("#units td:first-child a")).map(a => a.textContent)`, &keys),
			chromedp.Evaluate(`!!document.querySelector("#next")`, &hasNext))
		for _, k := range keys {
			seen[k] = true
		}
		if !hasNext {
			break
		}
		if pages > 20 {
			t.Fatal("more than 20 pages of 1,000 units")
		}
		run(t, ctx, chromedp.Click("#next", chromedp.NodeVisible), chromedp.WaitVisible("#units"))
	}
	if len(seen) != 10_000 || !seen["u00000"] || !seen["u09999"] {
		t.Errorf("paging saw %d distinct units, want 10,000", len(seen))
	}
	screenshot(t, ctx, "dashboard-big-last-page")

	// A failed unit and its traceback.
	var tb string
	run(t, ctx, chromedp.Navigate(base+"/ui/spec?name=work&status=failed"), chromedp.WaitVisible("#units"),
		chromedp.Click(`//table[@id="units"]//a[text()="bad"]`, chromedp.BySearch), chromedp.WaitVisible("#traceback"),
		chromedp.Text("#traceback", &tb))
	if !strings.Contains(tb, "ValueError: boom") {
		t.Errorf("traceback shown = %q", tb)
	}
	screenshot(t, ctx, "dashboard-failed-unit")

	// A group and its graph: 4 units, the failed root outlined.
	var nodes, roots int
	var rootTitle string
	run(t, ctx, chromedp.Navigate(base+"/ui/group?name=g"), chromedp.WaitVisible("#group-graph"),
		chromedp.Evaluate(`document.querySelectorAll("#group-graph .node").length`, &nodes),
		chromedp.Evaluate(`document.querySelectorAll("#group-graph .failed-root").length`, &roots),
		chromedp.Evaluate(`document.querySelector("#group-graph .failed-root title").textContent`, &rootTitle))
	if nodes != 4 || roots != 1 || !strings.Contains(rootTitle, "work/root") {
		t.Errorf("group graph: %d nodes, %d failed roots (%q); want 4 and 1 (work/root)", nodes, roots, rootTitle)
	}
	screenshot(t, ctx, "dashboard-group-graph")

	// Workers with their mode and the units they hold.
	var held, mode string
	run(t, ctx, chromedp.Navigate(base+"/ui/workers"), chromedp.WaitVisible("#workers"),
		chromedp.Text(`tr[data-worker="w1"] td.held`, &held), chromedp.Text(`tr[data-worker="w1"] td:nth-child(2)`, &mode))
	if !strings.HasPrefix(held, "1 ") || !strings.Contains(held, "work/lease") || !strings.Contains(mode, "run") {
		t.Errorf("worker w1: mode %q, units held %q; want run and work/lease", mode, held)
	}
	screenshot(t, ctx, "dashboard-workers")

	// Pause, resume and retry through the buttons.
	run(t, ctx, chromedp.Navigate(base+"/ui/spec?name=work"), chromedp.Click("#pause", chromedp.NodeVisible), chromedp.WaitVisible("#flash"), chromedp.WaitVisible("#resume"))
	if ws, _ := f.ns.WorkSpec(f.ctx, "work"); !ws.Meta.Paused {
		t.Errorf("work not paused after the pause button")
	}
	screenshot(t, ctx, "dashboard-paused")
	run(t, ctx, chromedp.Click("#resume", chromedp.NodeVisible), chromedp.WaitVisible("#pause"))
	var flash string
	run(t, ctx, chromedp.Text("#flash", &flash))
	if flash != "resume: work spec resumed" {
		t.Errorf("after resume the page says %q", flash)
	}
	if ws, _ := f.ns.WorkSpec(f.ctx, "work"); ws.Meta.Paused {
		t.Errorf("work still paused after the resume button")
	}
	failedBefore := f.rpcCounts("work")[int(coordinate.StatusFailed)]
	run(t, ctx, chromedp.Navigate(base+"/ui/spec?name=work"), chromedp.Click("#retry", chromedp.NodeVisible), chromedp.WaitVisible("#flash"))
	screenshot(t, ctx, "dashboard-retried")
	if n := f.rpcCounts("work")[int(coordinate.StatusFailed)]; failedBefore == 0 || n != 0 {
		t.Errorf("failed units: %d before retry, %d after; want some, then none", failedBefore, n)
	}
}

// With actions off the buttons are there but refused.
func TestBrowserActionsOff(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.everyState()
	ctx := browser(t)
	var msg string
	run(t, ctx, chromedp.Navigate(f.http.URL+"/ui/spec?name=work"), chromedp.Click("#pause", chromedp.NodeVisible),
		chromedp.WaitVisible("#message"), chromedp.Text("#message", &msg))
	if !strings.Contains(msg, "actions are disabled") {
		t.Errorf("pause with actions off answered %q", msg)
	}
	screenshot(t, ctx, "dashboard-actions-off")
	run(t, ctx, chromedp.Navigate(f.http.URL+"/ui/spec?name=work"), chromedp.Click("#retry", chromedp.NodeVisible),
		chromedp.WaitVisible("#message"))
	if ws, _ := f.ns.WorkSpec(f.ctx, "work"); ws.Meta.Paused {
		t.Errorf("work paused although actions are off")
	}
	if n := f.rpcCounts("work")[int(coordinate.StatusFailed)]; n != 4 {
		t.Errorf("failed units = %d after a refused retry, want 4 (bad, root and root's two dependents)", n)
	}

	// With "refresh every 5 s" ticked, a new unit shows up without a reload.
	run(t, ctx, chromedp.Navigate(f.http.URL+"/ui/"), chromedp.WaitVisible("#specs"), chromedp.Click("#autorefresh"))
	f.add("idle", "new")
	var shown string
	run(t, ctx, chromedp.Poll(`document.querySelector('tr[data-spec="idle"] td[data-status="available"]').textContent.trim() === "1"`,
		nil, chromedp.WithPollingTimeout(15*time.Second)),
		chromedp.Text(`tr[data-spec="idle"] td[data-status="available"]`, &shown))
	if shown != "1" {
		t.Errorf("after a refresh the idle spec shows %q available, want 1", shown)
	}
}

// The Python-style summary page: table against the counts, a link followed.
func TestBrowserSummaryPage(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.everyState()
	ctx := browser(t)
	var rows [][]string
	run(t, ctx, chromedp.Navigate(f.http.URL+"/"), chromedp.WaitVisible("#summary"),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#summary tr")).map(tr => Array.from(tr.children).map(c => c.textContent))`, &rows))
	screenshot(t, ctx, "summary")
	if len(rows) != 5 || strings.Join(rows[0], ",") != "work spec name,AVAILABLE,BLOCKED,PENDING,FINISHED,FAILED" {
		t.Fatalf("summary table = %q", rows)
	}
	for _, r := range rows[1:] {
		rpc := f.rpcCounts(r[0])
		for i, st := range allStatuses {
			if want := fmt.Sprint(rpc[int(st)]); r[i+1] != want {
				t.Errorf("summary %s %s = %s, count_work_units says %s", r[0], st, r[i+1], want)
			}
		}
	}
	var keys []string
	var loc string
	run(t, ctx, chromedp.Click(`//table[@id="summary"]//tr[td[1]="work"]/td[6]/a`, chromedp.BySearch), chromedp.WaitVisible("#units"),
		chromedp.Location(&loc),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#units td:first-child")).map(td => td.textContent)`, &keys))
	screenshot(t, ctx, "summary-failed-units")
	if !strings.Contains(loc, "ws=work") || !strings.Contains(loc, "wus=5") || strings.Join(keys, " ") != "bad child grandchild root" {
		t.Errorf("followed the FAILED link of work to %s listing %q; want ?ws=work&wus=5 listing bad child grandchild root", loc, keys)
	}
	var pendingRow string
	run(t, ctx, chromedp.Navigate(f.http.URL+"/?ws=work&wus=3"), chromedp.WaitVisible("#units"), chromedp.Text("#units", &pendingRow))
	if !strings.Contains(pendingRow, "lease") || !strings.Contains(pendingRow, "w1") {
		t.Errorf("pending listing %q lacks the unit or its worker", pendingRow)
	}
}
