package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/internal/testdaemon"
	"github.com/coordinated/coordinated/jobserver"
)

// TestBadInput: a missing or broken config, an unreachable daemon, a bad
// flow file and a bad units file each give one clear line on stderr, exit
// 1, and send nothing.
func TestBadInput(t *testing.T) {
	e := newCLIEnv(t, testdaemon.Ours(t, "memory"))
	run1 := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	expect := func(what string, code int, stderr string, wantCode int, wantErr ...string) {
		t.Helper()
		if code != wantCode {
			t.Errorf("%s: exit %d, want %d (stderr %q)", what, code, wantCode, stderr)
		}
		if n := strings.Count(stderr, "\n"); wantCode == 1 && n != 1 {
			t.Errorf("%s: want one line on stderr, got %q", what, stderr)
		}
		for _, w := range wantErr {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr %q lacks %q", what, stderr, w)
			}
		}
	}
	_, stderr, code := run1("work_specs")
	expect("no -c", code, stderr, 1, "no configuration: give -c FILE")
	_, stderr, code = run1("-c", "missing.yaml", "work_specs")
	expect("missing config", code, stderr, 1, "missing.yaml", "no such file")
	os.WriteFile("noaddr.yaml", []byte("coordinate: {retries: 1}\n"), 0o644)
	_, stderr, code = run1("-c", "noaddr.yaml", "work_specs")
	expect("config without an address", code, stderr, 1, "coordinate.address")

	// Unreachable: the Python client's policy, with short waits from the
	// config: 3 attempts, then one line.
	os.WriteFile("down.yaml", []byte("coordinate:\n  address: \"127.0.0.1:1\"\n  retries: 2\n  base_retry_seconds: 0.01\n"), 0o644)
	_, stderr, code = run1("-c", "down.yaml", "summary")
	expect("unreachable daemon", code, stderr, 1, "cannot reach the coordinate daemon at 127.0.0.1:1", "3 attempts")
	if strings.Contains(stderr, "Traceback") || strings.Contains(stderr, "goroutine") {
		t.Errorf("unreachable daemon: %q", stderr)
	}

	// A malformed flow file: file:line: field, nothing sent.
	os.WriteFile("bad-flow.yaml", []byte("flows:\n  a:\n    min_gb: 1\n  b:\n    min_gb: 1\n    weight: heavy\n"), 0o644)
	_, stderr, code = e.goRun("", "flow", "bad-flow.yaml")
	expect("bad flow", code, stderr, 1, `bad-flow.yaml:6: flows.b.weight: "weight" must be`)
	os.WriteFile("bad-then.yaml", []byte("flows:\n  a:\n    min_gb: 1\n    then: c\n"), 0o644)
	_, stderr, code = e.goRun("", "flow", "bad-then.yaml")
	expect("bad then", code, stderr, 1, "bad-then.yaml:4: flows.a.then: work spec a chained to invalid work spec c")
	if out, _, _ := e.goRun("", "work_specs"); out != "" {
		t.Errorf("a bad flow file sent specs: %q", out)
	}

	// A bad units line: its number, nothing sent; --keep-going sends the
	// good lines.
	os.WriteFile("bad-units.json", []byte("{\"a\": {}}\n# ok\n[1, 2]\n{\"b\": {}}\n{\"c\": \n"), 0o644)
	_, stderr, code = e.goRun("", "load", "-w", "spec.yaml", "-u", "bad-units.json")
	expect("bad units line", code, stderr, 1, "bad-units.json:3: not a JSON object", "nothing was sent")
	if out, _, _ := e.goRun("", "work_specs"); out != "" {
		t.Errorf("a bad units file sent something: %q", out)
	}
	out, stderr, code := e.goRun("", "load", "-w", "spec.yaml", "-u", "bad-units.json", "--keep-going")
	if code != 0 || !strings.Contains(out, "finished writing 2 work units to work_spec='lspec'") ||
		!strings.Contains(stderr, "bad-units.json:3:") || !strings.Contains(stderr, "bad-units.json:5:") {
		t.Errorf("--keep-going: exit %d\n%s%s", code, out, stderr)
	}

	// A daemon error: one line, exit 1.
	_, stderr, code = e.goRun("", "status", "-W", "nope")
	expect("unknown spec", code, stderr, 1, `work spec "nope"`, "no such work_spec")

	// Usage errors: exit 2, as argparse.
	_, _, code = e.goRun("", "work_units")
	if code != 2 {
		t.Errorf("work_units without -w|-W: exit %d, want 2", code)
	}
	_, _, code = e.goRun("", "work_units", "-W", "x", "-s", "odd")
	if code != 2 {
		t.Errorf("work_units -s odd: exit %d, want 2", code)
	}
	_, stderr, code = e.goRun("", "run_one")
	expect("run_one", code, stderr, 1, "Go tasks only")
}

// TestExtras: what the Python CLI lacks: -o json, .gz and stdin units,
// completion, help, archive.
func TestExtras(t *testing.T) {
	e := newCLIEnv(t, testdaemon.Ours(t, "memory"))
	mustRun := func(stdin string, args ...string) string {
		t.Helper()
		out, stderr, code := e.goRun(stdin, args...)
		if code != 0 {
			t.Fatalf("coordinate %v: exit %d: %s", args, code, stderr)
		}
		return out
	}
	mustRun("", "load", "-w", "spec.yaml", "-u", "units2.json.gz")
	mustRun("{\"s1\": {\"x\": 1}}\n", "addwork", "-W", "lspec", "-u", "-")
	var units []map[string]any
	if err := json.Unmarshal([]byte(mustRun("", "work_units", "-W", "lspec", "--details", "-o", "json")), &units); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(units) != "[map[data:map[] key:g1] map[data:map[z:1] key:g2] map[data:map[x:1] key:s1]]" {
		t.Errorf("work_units -o json = %v", units)
	}
	var names []string
	if err := json.Unmarshal([]byte(mustRun("", "work_specs", "-o", "json")), &names); err != nil || fmt.Sprint(names) != "[lspec]" {
		t.Errorf("work_specs -o json = %v, %v", names, err)
	}
	var summary map[string]any
	if err := json.Unmarshal([]byte(mustRun("", "summary", "-o", "json")), &summary); err != nil {
		t.Fatal(err)
	}
	if s, _ := summary["lspec"].(map[string]any); s["num_available"] != 3.0 {
		t.Errorf("summary -o json = %v", summary)
	}
	// summary --watch redraws until interrupted.
	ctx, cancel := context.WithCancel(context.Background())
	var watched, werr bytes.Buffer
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	if code := run(ctx, []string{"-c", "client.yaml", "summary", "--watch", "--interval", "0.05"}, strings.NewReader(""), &watched, &werr); code != 0 {
		t.Errorf("summary --watch: exit %d: %s", code, werr.String())
	}
	if n := strings.Count(watched.String(), "\x1b[H\x1b[2J"); n < 1 || strings.Count(watched.String(), "lspec ") != n {
		t.Errorf("summary --watch drew %d screens:\n%q", n, watched.String())
	}
	if out := mustRun("", "delete_work_units", "-W", "lspec", "-s", "failed"); out != "Removed 0 work units.\n" {
		t.Errorf("delete_work_units: %q", out)
	}
	mustRun("", "archive")
	mustRun("", "archive", "-W", "lspec")
	for _, shell := range []string{"bash", "zsh"} {
		script := mustRun("", "completion", shell)
		if !strings.Contains(script, "work_units) opts=") || !strings.Contains(script, "complete -o default -F _coordinate coordinate") {
			t.Errorf("completion %s:\n%s", shell, script)
		}
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		script := mustRun("", "completion", "bash")
		check := exec.Command(bash, "-c", script+"\nCOMP_WORDS=(coordinate work_u); COMP_CWORD=1; _coordinate; echo ${COMPREPLY[@]}")
		if out, err := check.Output(); err != nil || strings.TrimSpace(string(out)) != "work_unit work_units" {
			t.Errorf("bash completion of work_u: %q, %v", out, err)
		}
	}
	if help := mustRun("", "help"); !strings.Contains(help, "work_units") || !strings.Contains(help, "summary") {
		t.Errorf("help:\n%s", help)
	}
	if help := mustRun("", "help", "clear"); !strings.Contains(help, "-s {available,pending,blocked,finished,failed}") {
		t.Errorf("help clear:\n%s", help)
	}
}

// pkgDir is this package's directory (tests change the working directory).
var pkgDir, _ = os.Getwd()

var buildOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "coordinate-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "coordinate")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = pkgDir
	out, err := build.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

func binary(t testing.TB) string {
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// writeUnits writes n lines of units, one unit per line.
func writeUnits(t testing.TB, path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bytes.Buffer{}
	for i := range n {
		fmt.Fprintf(&w, "{\"unit-%09d\": {\"url\": \"http://example.com/%d\", \"n\": %d}}\n", i, i, i)
		if w.Len() > 1<<20 {
			f.Write(w.Bytes())
			w.Reset()
		}
	}
	f.Write(w.Bytes())
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// loadPeakRSS runs `coordinate load` of an n-line file in a subprocess and
// returns its peak RSS in bytes and how long it took.
func loadPeakRSS(t testing.TB, dir string, n int) (int64, time.Duration) {
	units := filepath.Join(dir, fmt.Sprintf("units-%d.json", n))
	writeUnits(t, units, n)
	cmd := exec.Command(binary(t), "-c", "client.yaml", "load", "-w", "spec.yaml", "-u", units)
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	if want := fmt.Sprintf("finished writing %d work units", n); !strings.Contains(string(out), want) {
		t.Fatalf("load output lacks %q:\n%s", want, out)
	}
	return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss * 1024, took
}

// TestLoadStreamsInBoundedMemory: loading 200,000 units costs the CLI
// about what loading 20,000 does: it holds one batch, not the file.
func TestLoadStreamsInBoundedMemory(t *testing.T) {
	e := newCLIEnv(t, testdaemon.Ours(t, "memory"))
	small, _ := loadPeakRSS(t, e.dir, 20000)
	big, _ := loadPeakRSS(t, e.dir, 200000)
	t.Logf("peak RSS: %d MB for 20,000 units, %d MB for 200,000", small>>20, big>>20)
	// One batch is ~10,000 units; the only per-unit state kept is an
	// 8-byte key hash for the count (1.6 MB for 200,000 keys). Holding the
	// file's units would add well over 100 MB; the margin is for the
	// garbage collector's pacing, which varies with the machine's load.
	if big > small+48<<20 {
		t.Errorf("peak RSS grew from %d MB to %d MB for 10 times the units", small>>20, big>>20)
	}
	if out, _, _ := e.goRun("", "status", "-W", "lspec"); !strings.Contains(out, `"num_tasks": 200000`) {
		t.Errorf("status after the loads:\n%s", out)
	}
}

// TestProgressBarOnATerminal: load on a pseudo-terminal draws a progress
// bar on stderr; on a pipe it draws nothing.
func TestProgressBarOnATerminal(t *testing.T) {
	e := newCLIEnv(t, testdaemon.Ours(t, "memory"))
	writeUnits(t, filepath.Join(e.dir, "u.json"), 30000)
	cmd := exec.Command(binary(t), "-c", "client.yaml", "load", "-w", "spec.yaml", "-u", "u.json", "--batch", "1000")
	cmd.Dir = e.dir
	stdout, s, err := testdaemon.RunOnTerminal(t, cmd)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, s)
	}
	if !strings.Contains(s, "work spec lspec [") || !strings.Contains(s, "100% 30000/30000 units") || !strings.Contains(s, "/s ETA") {
		t.Errorf("no progress bar on the terminal:\n%q", s)
	}
	if strings.Contains(stdout, "\r") {
		t.Errorf("progress bar on stdout: %q", stdout)
	}
	// On a pipe: no bar.
	cmd = exec.Command(binary(t), "-c", "client.yaml", "addwork", "-W", "lspec", "-u", "u.json")
	cmd.Dir = e.dir
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("addwork on a pipe printed %q (%v)", out, err)
	}
}

// BenchmarkLoadMillion loads a 1,000,000-line units file with the binary
// into an in-process memory daemon and reports units/s and the CLI's peak
// RSS (make bench-load).
func BenchmarkLoadMillion(b *testing.B) {
	addr := testdaemon.Ours(b, "memory")
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "client.yaml"), []byte(fmt.Sprintf("coordinate:\n  address: \"%s\"\n", addr)), 0o644)
	os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(specYAML), 0o644)
	const n = 1_000_000
	for b.Loop() {
		rss, took := loadPeakRSS(b, dir, n)
		b.ReportMetric(float64(n)/took.Seconds(), "units/s")
		b.ReportMetric(float64(rss>>20), "peak-RSS-MB")
	}
}

// TestLoadBatchesByDataSize: a batch is bounded by its lines' size, data
// included, not only by its keys. 120 units of 200 KB each (24 MB) against
// a daemon that takes requests of at most 20 MB: one batch by count, so
// the CLI used to send it whole and the daemon closed the connection.
func TestLoadBatchesByDataSize(t *testing.T) {
	e := newCLIEnv(t, testdaemon.OursWithServer(t, "memory", jobserver.Config{}, cborrpc.ServerOptions{MaxRequestSize: 20 << 20}))
	const n = 120
	pad := strings.Repeat("x", 200<<10)
	var w bytes.Buffer
	for i := range n {
		fmt.Fprintf(&w, "{\"big-%03d\": {\"pad\": %q}}\n", i, pad)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "big.json"), w.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := e.goRun("", "load", "-w", "spec.yaml", "-u", "big.json"); code != 0 {
		t.Fatalf("load of %d MB of units: exit %d\n%s\n%s", w.Len()>>20, code, out, stderr)
	}
	if out, _, _ := e.goRun("", "status", "-W", "lspec"); !strings.Contains(out, fmt.Sprintf(`"num_tasks": %d`, n)) {
		t.Errorf("status after the load:\n%s", out)
	}
}

// TestWorkUnitsLimitNotPositive: -n 0 and -n -1 are sent as the limit, as
// the Python CLI sends them (our daemon answers none; Python's one, which
// the Python CLI then slices with [:N]); they do not mean "no limit".
func TestWorkUnitsLimitNotPositive(t *testing.T) {
	e := newCLIEnv(t, testdaemon.Ours(t, "memory"))
	if out, _, code := e.goRun("", "load", "-w", "spec.yaml", "-u", "units.json"); code != 0 {
		t.Fatalf("load: exit %d: %s", code, out)
	}
	if out, _, _ := e.goRun("", "work_units", "-W", "lspec", "-n", "2"); out != "u1\nu2\n" {
		t.Errorf("work_units -n 2 = %q", out)
	}
	for _, n := range []string{"0", "-1"} {
		out, stderr, code := e.goRun("", "work_units", "-W", "lspec", "-n", n)
		if out != "" || code != 0 {
			t.Errorf("work_units -n %s = %q, exit %d (stderr %q); want nothing, as the Python CLI prints", n, out, code, stderr)
		}
	}
}
