package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/internal/testdaemon"
)

// These tests run the Python coordinate CLI (from $COORDINATE_TEST_PY27)
// and this one on the same daemon state and require the same stdout.

const (
	flowYAML = `flows:
  first:
    min_gb: 1
    module: my.tasks
    run_function: run_first
    then: grp.inner
    config:
      my_package: {threads: 4}
  grp:
    inner:
      min_gb: 0.5
      module: my.tasks
      run_function: run_inner
      nice: 5
`
	specYAML  = "name: lspec\nmin_gb: 1\nmodule: chain_tasks\nrun_function: run_b\ndesc: loaded by the CLI\n"
	unitsJSON = `{"u1": {"n": 1}}
# a comment line, then a blank one

{"u2": {"n": 2, "s": "x", "l": [1.5, null, true]}, "u3": {"n": 3}}
{"u1": {"n": 10}}
`
)

// cliEnv is a working directory with a client config for one daemon and
// the test's spec, flow and units files.
type cliEnv struct {
	t    *testing.T
	dir  string
	addr string
}

func newCLIEnv(t *testing.T, addr string) *cliEnv {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("client.yaml", fmt.Sprintf("coordinate:\n  address: \"%s\"\n", addr))
	write("flow.yaml", flowYAML)
	write("spec.yaml", specYAML)
	write("units.json", unitsJSON)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"g1": {}, "g2": {"z": 1}}` + "\n"))
	zw.Close()
	write("units2.json.gz", gz.String())
	t.Chdir(dir)
	return &cliEnv{t: t, dir: dir, addr: addr}
}

// py runs the Python CLI; it returns stdout and the exit status.
func (e *cliEnv) py(stdin string, args ...string) (string, int) {
	e.t.Helper()
	cmd := exec.Command(filepath.Join(testdaemon.PyVenv(e.t), "bin", "coordinate"), append([]string{"-c", "client.yaml"}, args...)...)
	cmd.Dir = e.dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		e.t.Fatalf("python coordinate %v: %v", args, err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// goRun runs this CLI in process; it returns stdout, stderr and the exit
// status.
func (e *cliEnv) goRun(stdin string, args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"-c", "client.yaml"}, args...), strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

var fileAddr = regexp.MustCompile(`at 0x[0-9a-f]+>`)

// mask hides what differs between two runs by nature: addresses of Python
// file objects.
func mask(s string) string { return fileAddr.ReplaceAllString(s, "at ADDR>") }

// same runs one command with both CLIs and requires equal stdout and exit
// status.
func (e *cliEnv) same(args ...string) {
	e.t.Helper()
	e.sameIn("", args...)
}

func (e *cliEnv) sameIn(stdin string, args ...string) {
	e.t.Helper()
	want, wantCode := e.py(stdin, args...)
	got, stderr, code := e.goRun(stdin, args...)
	if mask(got) != mask(want) || code != wantCode {
		e.t.Errorf("coordinate %s:\n--- python (exit %d)\n%s--- go (exit %d)\n%s--- go stderr\n%s", strings.Join(args, " "), wantCode, want, code, got, stderr)
	}
}

func bs(s string) cbor.ByteString { return cbor.ByteString(s) }

// workSome leases units of `first` and leaves one pending, one finished
// and one failed with a traceback; worker w1 has a heartbeat.
func workSome(t *testing.T, addr string) (pending, finished, failed string) {
	ctx := context.Background()
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hb := map[any]any{bs("fqdn"): []byte("host.example.com"), bs("ipaddrs"): []any{[]byte("10.0.0.1"), []byte("10.0.0.2")}}
	if err := c.WorkerHeartbeat(ctx, "w1", "RUN", 6000, hb, nil); err != nil {
		t.Fatal(err)
	}
	work, err := c.GetWork(ctx, "w1", client.WorkRequest{WorkSpecNames: []string{"first"}, MaxJobs: 3, LeaseTime: time.Hour})
	if err != nil || len(work) != 3 {
		t.Fatalf("GetWork = %v, %v", work, err)
	}
	key := func(i int) string { s, _ := client.Text(work[i].Key); return s }
	if err := c.UpdateWorkUnit(ctx, "first", work[1].Key, client.UnitUpdate{Status: client.Finished}); err != nil {
		t.Fatal(err)
	}
	tb := map[any]any{"n": int64(3), bs("traceback"): []byte("Traceback (most recent call last):\n  boom")}
	if err := c.UpdateWorkUnit(ctx, "first", work[2].Key, client.UnitUpdate{Status: client.Failed, Data: tb, SetData: true}); err != nil {
		t.Fatal(err)
	}
	return key(0), key(1), key(2)
}

// readOnly compares every read-only command on the daemon's current state.
func (e *cliEnv) readOnly(pending, finished, failed string) {
	e.same("work_specs")
	e.same("work_spec", "-W", "first")
	e.same("work_spec", "-W", "grp.inner", "--json")
	e.same("work_spec", "-w", "spec.yaml")
	e.same("work_spec", "-W", "nope")
	e.same("status", "-W", "first")
	e.same("status", "-w", "spec.yaml")
	e.same("summary")
	e.same("summary", "--text")
	e.same("work_units", "-W", "first")
	e.same("work_units", "-W", "first", "--details")
	e.same("work_units", "-W", "first", "-s", "failed", "--details")
	e.same("work_units", "-W", "lspec", "-n", "2")
	e.same("work_units", "-W", "lspec", "-n", "0")
	e.same("work_units", "-W", "lspec", "-n", "-1")
	e.same("work_units", "-W", "lspec", "--status", "available", "--details")
	e.same("work_unit", "-W", "first", pending, finished, failed)
	e.same("workers")
	e.same("worker_stats")
	e.same("config")
	e.same("rpc", "count_work_units", "first")
	e.same("rpc", "get_work_units", "lspec", "{work_unit_keys: [u1, nope]}")
	e.same("rpc", "no_such_method")
	e.same("work_specs", "--bogus")
	// No action: the interactive shell, fed from stdin.
	e.sameIn("work_specs\nwork_units -W 'first' -n 1\n\nstatus -W first\n")
	e.sameIn("work_specs\nquit\nwork_specs\n")
}

// TestReadOnlyCommandsMatchPython: the read-only commands print exactly
// what the Python CLI prints, on our daemon (both backends) and on the
// Python daemon.
func TestReadOnlyCommandsMatchPython(t *testing.T) {
	daemons := map[string]func(*testing.T) string{
		"memory":   func(t *testing.T) string { return testdaemon.Ours(t, "memory") },
		"postgres": func(t *testing.T) string { return testdaemon.Ours(t, "postgres") },
		"python":   func(t *testing.T) string { return testdaemon.Python(t) },
	}
	for _, name := range []string{"memory", "postgres", "python"} {
		t.Run(name, func(t *testing.T) {
			e := newCLIEnv(t, daemons[name](t))
			for _, args := range [][]string{{"flow", "flow.yaml"}, {"load", "-w", "spec.yaml", "-u", "units.json"}, {"addwork", "-W", "first", "-u", "units.json"}} {
				if out, code := e.py("", args...); code != 0 {
					t.Fatalf("python coordinate %v: exit %d\n%s", args, code, out)
				}
			}
			e.readOnly(workSome(t, e.addr))
		})
	}
}

// writeSequence is every command that changes the daemon, in an order
// that leaves something for each to do.
var writeSequence = [][]string{
	{"flow", "flow.yaml"},
	{"load", "-w", "spec.yaml", "-u", "units.json"},
	{"load", "-w", "spec.yaml", "-n", "3", "--no-work"},
	{"addwork", "-W", "first", "-u", "units.json"},
	{"addwork", "-w", "spec.yaml", "-u", "units.json"},
	{"prioritize", "first", "u3"},
	{"pause", "lspec"},
	{"resume", "grp.inner"},
	{"pause", "no-such-spec"},
	{"retry", "-W", "first", "u1"},
	{"retry", "-W", "first", "-a"},
	{"retry", "-W", "lspec", "-a"},
	{"clear", "-W", "lspec", "u1"},
	{"clear", "-W", "first", "-s", "finished"},
	{"clear", "-W", "lspec", "-s", "available", "u2", "u3"},
	{"clear", "-W", "grp.inner"},
}

// TestWriteCommandsMatchPython runs the same sequence of changes with the
// Python CLI and then, after clearing everything, with ours on the same
// daemon (ours, both backends): the same stdout for each command, and the
// same state after the sequence.
func TestWriteCommandsMatchPython(t *testing.T) {
	for _, backend := range testdaemon.Backends {
		t.Run(backend, func(t *testing.T) {
			e := newCLIEnv(t, testdaemon.Ours(t, backend))
			type result struct {
				out  string
				code int
			}
			var outputs [2][]result
			var states [2]string
			for side := range 2 {
				for i, args := range writeSequence {
					if i == 5 {
						failTwo(t, e.addr) // for retry -a
					}
					var r result
					if side == 0 {
						r.out, r.code = e.py("", args...)
					} else {
						var stderr string
						r.out, stderr, r.code = e.goRun("", args...)
						if stderr != "" {
							t.Logf("coordinate %v: stderr %s", args, stderr)
						}
					}
					outputs[side] = append(outputs[side], result{mask(r.out), r.code})
				}
				// The state, through read-only commands compared with
				// Python's by TestReadOnlyCommandsMatchPython.
				var st strings.Builder
				for _, args := range [][]string{{"summary"}, {"work_spec", "-W", "first"}, {"work_spec", "-W", "lspec"},
					{"work_units", "-W", "first", "--details"}, {"work_units", "-W", "lspec", "--details"}, {"rpc", "get_work_spec_meta", "lspec"}} {
					out, _, _ := e.goRun("", args...)
					st.WriteString(out)
				}
				states[side] = st.String()
				if side == 0 {
					e.sameIn("no\n", "delete")
					if out, code := e.py("", "delete", "-y"); out != "deleting all\n" || code != 0 {
						t.Fatalf("python delete -y: %q, %d", out, code)
					}
				}
			}
			for i, args := range writeSequence {
				if outputs[0][i] != outputs[1][i] {
					t.Errorf("coordinate %s:\n--- python\n%+v\n--- go\n%+v", strings.Join(args, " "), outputs[0][i], outputs[1][i])
				}
			}
			if states[0] != states[1] {
				t.Errorf("state after the sequence:\n--- python CLI\n%s--- go CLI\n%s", states[0], states[1])
			}
			if out, _, code := e.goRun("", "delete", "-y"); out != "deleting all\n" || code != 0 {
				t.Errorf("delete -y: %q, %d", out, code)
			}
			if out, _, _ := e.goRun("", "work_specs"); out != "" {
				t.Errorf("work_specs after delete -y: %q", out)
			}
		})
	}
}

func failTwo(t *testing.T, addr string) {
	ctx := context.Background()
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	work, err := c.GetWork(ctx, "w9", client.WorkRequest{WorkSpecNames: []string{"first"}, MaxJobs: 3})
	if err != nil || len(work) != 3 {
		t.Fatalf("GetWork = %v, %v", work, err)
	}
	for i, w := range work {
		status := client.Failed
		if i == 2 {
			status = client.Finished
		}
		if err := c.UpdateWorkUnit(ctx, "first", w.Key, client.UnitUpdate{Status: status}); err != nil {
			t.Fatal(err)
		}
	}
}
