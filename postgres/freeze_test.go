package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/pgtest"
)

// throwawayServer starts a PostgreSQL server of the test's own with
// scripts/postgres.sh (so it can be frozen without disturbing other
// tests) and returns its URL and data directory; it is stopped when the
// test ends.
func throwawayServer(t *testing.T) (url, dataDir string) {
	t.Helper()
	pgtest.URL(t) // the test command provides PostgreSQL; without it, fail as every database test does
	dir, err := os.MkdirTemp("", "coordinated-freeze-")
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("../scripts/postgres.sh")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(script, "start", dir).Output()
	if err != nil {
		t.Fatalf("starting a throwaway PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(script, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("stopping the throwaway PostgreSQL: %v\n%s", err, out)
		}
		os.RemoveAll(dir)
	})
	return strings.TrimSpace(string(out)), filepath.Join(dir, "data")
}

// serverPids lists the postmaster of dataDir and its children.
func serverPids(t *testing.T, dataDir string) []int {
	t.Helper()
	pidFile, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	master, err := strconv.Atoi(strings.SplitN(string(pidFile), "\n", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	pids := []int{master}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		stat, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(master) {
			pid, _ := strconv.Atoi(strings.Fields(string(stat))[0])
			pids = append(pids, pid)
		}
	}
	return pids
}

// signalAll sends sig to every pid.
func signalAll(t *testing.T, pids []int, sig syscall.Signal) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Errorf("kill %d %v: %v", pid, sig, err)
		}
	}
}

// TestFrozenDatabaseFailsCallsInTime freezes the whole PostgreSQL server
// (SIGSTOP) under a backend with a one-second request timeout: every kind
// of call, more of them than the pool has connections, must fail with
// coordinate.ErrUnavailable instead of hanging, the backend must report
// not ready, and once the server runs again it must serve as before.
func TestFrozenDatabaseFailsCallsInTime(t *testing.T) {
	url, dataDir := throwawayServer(t)
	b, ns := openBackend(t, url, Options{MaxConns: 4, RequestTimeout: time.Second})
	ctx := t.Context()
	def, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns.SetWorkSpec(ctx, def); err != nil {
		t.Fatal(err)
	}
	units := make([]coordinate.WorkUnitInput, 10)
	for i := range units {
		units[i] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("u%d", i), Text: true}, Data: coordinate.EmptyMap}
	}
	if err := ns.AddWorkUnits(ctx, "s", units); err != nil {
		t.Fatal(err)
	}
	worker := coordinate.Name{Bytes: "w", Text: true}
	held, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, MaxJobs: 1, LeaseTime: time.Hour})
	if err != nil || len(held) != 1 {
		t.Fatalf("GetWork before the freeze: %v, %v", held, err)
	}

	// Stop the postmaster and its children, then any child it forked
	// between the listing and its stop, until the listing holds still.
	var pids []int
	for stopped := map[int]bool{}; ; {
		var fresh []int
		for _, pid := range serverPids(t, dataDir) {
			if !stopped[pid] {
				stopped[pid] = true
				fresh = append(fresh, pid)
			}
		}
		if len(fresh) == 0 {
			break
		}
		signalAll(t, fresh, syscall.SIGSTOP)
		pids = append(pids, fresh...)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			signalAll(t, pids, syscall.SIGCONT)
		}
	}
	defer thaw()

	// Bound the test itself: a call still blocked after this is a failure.
	callCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	calls := map[string]func() error{
		"list_work_specs":  func() error { _, _, err := ns.ListWorkSpecs(callCtx, "", 0); return err },
		"count_work_units": func() error { _, err := ns.CountWorkUnits(callCtx, "s"); return err },
		"add_work_units": func() error {
			return ns.AddWorkUnits(callCtx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "late", Text: true}, Data: coordinate.EmptyMap}})
		},
		"update_work_unit": func() error {
			return ns.UpdateAttempt(callCtx, coordinate.AttemptRef{Spec: "s", Key: held[0].Key.Bytes, ID: held[0].ID},
				coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
		},
	}
	for i := range 6 { // more get_work calls than pool connections
		calls[fmt.Sprintf("get_work %d", i)] = func() error {
			_, err := ns.GetWork(callCtx, coordinate.WorkRequest{Worker: worker, MaxJobs: 1, LeaseTime: time.Hour})
			return err
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := map[string]error{}
	start := time.Now()
	for name, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := call()
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("all %d calls answered %v after the freeze", len(calls), time.Since(start).Round(time.Millisecond))
	for name, err := range errs {
		if !errors.Is(err, coordinate.ErrUnavailable) {
			t.Errorf("%s on a frozen database: %v, want coordinate.ErrUnavailable", name, err)
		}
	}

	if err := b.Ready(callCtx); !errors.Is(err, coordinate.ErrUnavailable) {
		t.Errorf("Ready on a frozen database: %v, want coordinate.ErrUnavailable", err)
	}

	thaw()
	var ready error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ready = b.Ready(ctx); ready == nil {
			break
		}
	}
	if ready != nil {
		t.Fatalf("not ready after the server resumed: %v", ready)
	}
	as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, MaxJobs: 20, LeaseTime: time.Hour})
	if err != nil {
		t.Fatalf("GetWork after the thaw: %v", err)
	}
	counts, err := ns.CountWorkUnits(ctx, "s")
	if err != nil {
		t.Fatalf("CountWorkUnits after the thaw: %v", err)
	}
	// Nothing the frozen calls did may be half applied: the unit held
	// before the freeze is PENDING or FINISHED, the late add is all or
	// nothing, and every other unit was leased now.
	total := counts[coordinate.StatusPending] + counts[coordinate.StatusFinished]
	if len(counts) > 2 || total < 10 || total > 11 || len(as) < 8 {
		t.Errorf("after the thaw: counts %v, GetWork leased %d", counts, len(as))
	}
}
