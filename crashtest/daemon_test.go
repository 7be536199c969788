package crashtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// daemonBin is the coordinated binary TestMain builds.
var daemonBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "crashtest-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashtest:", err)
		os.Exit(1)
	}
	daemonBin = filepath.Join(dir, "coordinated")
	build := exec.Command("go", "build", "-o", daemonBin, "github.com/coordinated/coordinated/cmd/coordinated")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "crashtest: building the daemon: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// daemon is one running coordinated process.
type daemon struct {
	cmd  *exec.Cmd
	addr string
	logs *logBuffer
	done chan struct{} // closed when the process has exited and stderr is drained
}

// logBuffer collects a daemon's stderr for diagnostics.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) add(s string) {
	b.mu.Lock()
	b.lines = append(b.lines, s)
	b.mu.Unlock()
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

var listeningRE = regexp.MustCompile(`msg=listening addr=(\S+)`)

// startDaemon starts the binary with args (plus -listen on a free port)
// and returns once it accepts connections.
func startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	cmd := exec.Command(daemonBin, append([]string{"-listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir()) // never the user's own state
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemon{cmd: cmd, logs: &logBuffer{}, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			d.logs.add(line)
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
		cmd.Wait()
		close(d.done)
	}()
	select {
	case d.addr = <-addr:
		return d
	case <-d.done:
		t.Fatalf("daemon exited before listening:\n%s", d.logs)
	case <-time.After(60 * time.Second):
		d.kill()
		t.Fatalf("daemon not listening after 60s:\n%s", d.logs)
	}
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (d *daemon) kill() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

// stop sends SIGTERM and waits for a clean exit.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		d.kill()
		t.Fatalf("daemon did not stop within 60s of SIGTERM:\n%s", d.logs)
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("daemon exited %d after SIGTERM:\n%s", code, d.logs)
	}
}
