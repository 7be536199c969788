package pgtest

import (
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Server is a PostgreSQL server of one test's own, started with
// scripts/postgres.sh, that the test may freeze (SIGSTOP) without
// disturbing the others.
type Server struct {
	URL     string
	t       testing.TB
	dataDir string
	frozen  []int
}

// Throwaway starts a Server, stopped (and thawed first) when the test
// ends. It needs what the shared test server needs (initdb, pg_ctl and
// postgres on PATH), so like every database test it fails when
// COORDINATE_TEST_POSTGRES is unset.
func Throwaway(t testing.TB) *Server {
	t.Helper()
	URL(t)
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "postgres.sh")
	dir, err := os.MkdirTemp("", "coordinated-pg-")
	if err != nil {
		t.Fatal(err)
	}
	out, err := osexec.Command(script, "start", dir).Output()
	if err != nil {
		t.Fatalf("pgtest: starting a throwaway PostgreSQL: %v", err)
	}
	s := &Server{URL: strings.TrimSpace(string(out)), t: t, dataDir: filepath.Join(dir, "data")}
	t.Cleanup(func() {
		s.Thaw()
		if out, err := osexec.Command(script, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("pgtest: stopping the throwaway PostgreSQL: %v\n%s", err, out)
		}
		os.RemoveAll(dir)
	})
	return s
}

// Freeze stops every process of the server (SIGSTOP): the postmaster and
// its children, then any child it forked between the listing and its
// stop, until the listing holds still. Connections stay open and get no
// answer, as with a hung machine.
func (s *Server) Freeze() {
	s.t.Helper()
	stopped := map[int]bool{}
	for _, pid := range s.frozen {
		stopped[pid] = true
	}
	for {
		var fresh []int
		for _, pid := range s.pids() {
			if !stopped[pid] {
				stopped[pid] = true
				fresh = append(fresh, pid)
			}
		}
		if len(fresh) == 0 {
			return
		}
		s.signal(fresh, syscall.SIGSTOP)
		s.frozen = append(s.frozen, fresh...)
	}
}

// Thaw lets the frozen processes run again.
func (s *Server) Thaw() {
	s.signal(s.frozen, syscall.SIGCONT)
	s.frozen = nil
}

// pids lists the postmaster and its children.
func (s *Server) pids() []int {
	s.t.Helper()
	pidFile, err := os.ReadFile(filepath.Join(s.dataDir, "postmaster.pid"))
	if err != nil {
		s.t.Fatal(err)
	}
	master, err := strconv.Atoi(strings.SplitN(string(pidFile), "\n", 2)[0])
	if err != nil {
		s.t.Fatal(err)
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

func (s *Server) signal(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			s.t.Errorf("pgtest: kill %d %v: %v", pid, sig, err)
		}
	}
}
