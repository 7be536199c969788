// Package testdaemon starts coordinate daemons for tests of the client
// side (client/, cmd/coordinate, coordinated migrate): ours in process on
// either backend, and the real Python daemon from the coordinate==0.1.5
// package.
//
// The Python daemon lives in the Python 2.7 virtualenv that
// scripts/pythontest.sh builds; $COORDINATE_TEST_PY27 names that
// virtualenv's directory and scripts/test.sh always sets it. A test that
// needs the Python daemon fails (never skips) when it is unset, the same
// rule internal/pgtest applies to COORDINATE_TEST_POSTGRES.
package testdaemon

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/pgtest"
	"github.com/coordinated/coordinated/jobserver"
	"github.com/coordinated/coordinated/memory"
	"github.com/coordinated/coordinated/postgres"
)

// PyEnvVar names the variable holding the Python 2.7 virtualenv's path.
const PyEnvVar = "COORDINATE_TEST_PY27"

// Backends names the backends Ours accepts, for table-driven tests.
var Backends = []string{"memory", "postgres"}

// Ours starts our daemon in process on backend ("memory", or "postgres"
// in a fresh schema of the COORDINATE_TEST_POSTGRES server) and returns
// its address. It stops when the test ends.
func Ours(t testing.TB, backend string) string {
	t.Helper()
	return OursWithConfig(t, backend, jobserver.Config{})
}

// OursWithConfig is Ours with a jobserver configuration (e.g. a
// get_config tree).
func OursWithConfig(t testing.TB, backend string, cfg jobserver.Config) string {
	t.Helper()
	return OursWithServer(t, backend, cfg, cborrpc.ServerOptions{})
}

// OursWithServer is OursWithConfig with the RPC server's options (e.g.
// a smaller MaxRequestSize); their Logger is replaced.
func OursWithServer(t testing.TB, backend string, cfg jobserver.Config, opts cborrpc.ServerOptions) string {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	var b coordinate.Backend
	switch backend {
	case "memory":
		b = memory.New(memory.Options{})
	case "postgres":
		url, _ := pgtest.FreshSchema(t, "client_test")
		pb, err := postgres.New(ctx, url, postgres.Options{Logger: log})
		if err != nil {
			t.Fatalf("testdaemon: postgres backend: %v", err)
		}
		b = pb
	default:
		t.Fatalf("testdaemon: unknown backend %q", backend)
	}
	ns, err := b.Namespace(ctx, "")
	if err != nil {
		t.Fatalf("testdaemon: namespace: %v", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = log
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = log
	srv := cborrpc.NewServer(jobserver.New(ns, cfg), opts)
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-done
		b.Close()
	})
	return ln.Addr().String()
}

// PyVenv returns the Python 2.7 virtualenv's directory, failing the test
// when $COORDINATE_TEST_PY27 is unset or holds no coordinate package.
func PyVenv(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(PyEnvVar)
	if dir == "" {
		t.Fatal(PyEnvVar + " is not set: this test needs the Python 2.7 virtualenv with coordinate==0.1.5 " +
			"(scripts/test.sh sets it after scripts/pythontest.sh --setup-only builds .venv-py27; " +
			"or export " + PyEnvVar + "=$PWD/.venv-py27)")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{"coordinated", "coordinate"} {
		if _, err := os.Stat(filepath.Join(abs, "bin", bin)); err != nil {
			t.Fatalf("%s=%s: no bin/%s there: %v", PyEnvVar, dir, bin, err)
		}
	}
	return abs
}

// Python starts the real Python daemon on a free port and returns its
// address; it is stopped when the test ends (its log is printed if the
// test failed).
func Python(t testing.TB) string {
	t.Helper()
	venv := PyVenv(t)
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var log SyncBuffer
	cmd := exec.Command(filepath.Join(venv, "bin", "coordinated"), "--host", "127.0.0.1", "--port", fmt.Sprint(port))
	cmd.Dir = t.TempDir()
	cmd.Stdout = &log
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("testdaemon: starting the Python daemon: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("Python daemon log:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("testdaemon: the Python daemon exited before accepting connections:\n%s", log.String())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("testdaemon: the Python daemon did not listen on %s within 60s:\n%s", addr, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// SyncBuffer is a bytes.Buffer safe for a logger and a test to share.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
