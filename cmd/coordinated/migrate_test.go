package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/internal/testdaemon"
)

func runMigrateCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"migrate"}, args...), &stdout, &stderr, nil)
	if stderr.Len() > 0 && err == nil {
		t.Errorf("stderr: %s", stderr.String())
	}
	return stdout.String(), err
}

// TestMigrateCommand: `coordinated migrate -verify` from the real Python
// daemon into ours on both backends; a re-run copies nothing; once the
// target has moved on, -verify reports it and fails.
func TestMigrateCommand(t *testing.T) {
	for _, backend := range testdaemon.Backends {
		t.Run(backend, func(t *testing.T) {
			py := testdaemon.Python(t)
			ours := testdaemon.Ours(t, backend)
			pc, err := client.Dial(py)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			testdaemon.Populate(t, pc)

			out, err := runMigrateCmd(t, "-from", py, "-to", ours, "-verify", "-page-size", "7")
			if err != nil {
				t.Fatalf("migrate: %v\n%s", err, out)
			}
			for _, want := range []string{"ws1     written      21", "verify: every spec has the same unit counts"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			out, err = runMigrateCmd(t, "-from", py, "-to", ours, "-verify")
			if err != nil || !strings.Contains(out, "ws1        same       0         21") {
				t.Errorf("re-run: %v\n%s", err, out)
			}

			oc, err := client.Dial(ours)
			if err != nil {
				t.Fatal(err)
			}
			defer oc.Close()
			ctx := context.Background()
			w, err := oc.GetWork(ctx, "new-worker", client.WorkRequest{WorkSpecNames: []string{"ws3"}, LeaseTime: time.Hour})
			if err == nil && len(w) == 0 {
				// ws3 is paused, as on the source: resume it on the target.
				oc.PauseWorkSpec(ctx, "ws3", false)
				w, err = oc.GetWork(ctx, "new-worker", client.WorkRequest{WorkSpecNames: []string{"ws3"}, LeaseTime: time.Hour})
			}
			if err != nil || len(w) != 1 {
				t.Fatalf("GetWork(ws3) on the target = %v, %v", w, err)
			}
			if err := oc.UpdateWorkUnit(ctx, "ws3", w[0].Key, client.UnitUpdate{Status: client.Finished}); err != nil {
				t.Fatal(err)
			}
			out, err = runMigrateCmd(t, "-from", py, "-to", ours, "-spec", "ws3", "-verify")
			if !errors.Is(err, errDifferences) {
				t.Fatalf("migrate -verify after the target moved on: %v, want errDifferences\n%s", err, out)
			}
			for _, want := range []string{`verify: work spec "ws3": queued units: source 1, target 0`, `verify: work spec "ws3": finished units: source 0, target 1`} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

func TestMigrateUsage(t *testing.T) {
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"migrate", "-to", "x:1"}, &stderr, &stderr, nil); err != errUsage {
		t.Errorf("migrate without -from: %v", err)
	}
	err := run(context.Background(), []string{"migrate", "-from", "127.0.0.1:1", "-retries", "0"}, &stderr, &stderr, nil)
	var cerr *client.ConnectionError
	if !errors.As(err, &cerr) {
		t.Errorf("unreachable source: %v", err)
	}
}

// TestMigrateProgressBarOnATerminal: run as a program (this test binary,
// see TestMain) with stderr on a pseudo-terminal, migrate draws a progress
// bar per spec there and keeps stdout for the table.
func TestMigrateProgressBarOnATerminal(t *testing.T) {
	src, dst := testdaemon.Ours(t, "memory"), testdaemon.Ours(t, "memory")
	testdaemon.Populate(t, testdaemon.Dial(t, src))
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "COORDINATED_TEST_DAEMON=1", "COORDINATED_TEST_ARGS=migrate -from "+src+" -to "+dst+" -page-size 5")
	stdout, screen, err := testdaemon.RunOnTerminal(t, cmd)
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, stdout, screen)
	}
	for _, want := range []string{"ws1 (1/3) [", "100% 21/21 units", "ws3 (3/3) ["} {
		if !strings.Contains(screen, want) {
			t.Errorf("terminal lacks %q:\n%q", want, screen)
		}
	}
	if strings.Contains(stdout, "\r") || !strings.Contains(stdout, "work spec") {
		t.Errorf("stdout: %q", stdout)
	}
}
