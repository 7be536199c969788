package worker

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/testdaemon"
)

// helperAddrEnv, when set, makes TestWorkerProcess a worker process on
// that daemon (for TestReleaseOnOwnerDeath to kill).
const helperAddrEnv = "WORKER_TEST_HELPER_ADDR"

// TestWorkerProcess is not a test: run by TestReleaseOnOwnerDeath as a
// child process, it is a worker whose task never returns.
func TestWorkerProcess(t *testing.T) {
	addr := os.Getenv(helperAddrEnv)
	if addr == "" {
		return
	}
	q, err := NewRemote(client.DefaultConfig(addr))
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(q, Config{ID: "doomed", Lease: time.Hour, LongPoll: time.Second, HeartbeatInterval: 200 * time.Millisecond,
		WorkerExpire: time.Second, IdleMin: 10 * time.Millisecond, IdleMax: 50 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
		Tasks:  map[string]Task{"t": func(ctx context.Context, as []*Attempt) { select {} }}})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Run(context.Background())
}

// A Go worker killed mid-task: its unit is leased again within its
// registration lifetime (1 s), not after its one-hour lease.
func TestReleaseOnOwnerDeath(t *testing.T) {
	for _, backend := range testdaemon.Backends {
		t.Run(backend, func(t *testing.T) {
			e := newRemoteEnv(t, backend)
			e.spec(map[string]any{"name": "t", "runtime": "go"})
			e.add("t", "u")
			cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$")
			cmd.Env = append(os.Environ(), helperAddrEnv+"="+e.r.other.Address())
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			waitFor(t, "the child to lease the unit", func() bool { return e.status("t", "u") == 3 })
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			killed := time.Now()
			req := coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "rescuer", Text: true}, MaxJobs: 1,
				LeaseTime: time.Minute, Runtimes: []string{"go"}, Tasks: []string{"t"}}
			var got []coordinate.Attempt
			waitFor(t, "the unit to be leased again", func() bool {
				var err error
				got, err = e.r.GetWork(e.ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				return len(got) == 1
			})
			t.Logf("leased again %v after the kill", time.Since(killed).Round(time.Millisecond))
			if got[0].Key.Bytes != "u" {
				t.Fatalf("leased %q", got[0].Key.Bytes)
			}
		})
	}
}
