package journal

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// killChildEnv makes the test binary act as the child of TestKilledProcess.
const killChildEnv = "JOURNAL_TEST_KILL_CHILD_DIR"

// TestKilledProcess runs a child process that appends from several
// goroutines and prints each record once its Wait returned, kills it with
// SIGKILL mid-stream, and checks that every acknowledged record replays.
func TestKilledProcess(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		runKillChild(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledProcess$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(acked) < 500 {
		acked[sc.Text()] = true
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if len(acked) < 500 {
		t.Fatalf("child acknowledged only %d records before exiting", len(acked))
	}

	// The lock died with the child; the journal opens and holds every
	// acknowledged record.
	_, got := mustOpen(t, testOptions(dir, nil))
	present := map[string]bool{}
	for _, r := range got.records {
		present[string(r)] = true
	}
	for rec := range acked {
		if !present[rec] {
			t.Fatalf("acknowledged record %q lost by the kill", rec)
		}
	}
	t.Logf("%d acknowledged, %d replayed", len(acked), len(got.records))
}

// runKillChild appends until killed, printing acknowledged records.
func runKillChild(dir string) {
	j, err := Open(Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		err = j.Replay(func(io.Reader, SnapshotInfo) error { return nil }, func([]byte, uint32) error { return nil })
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var outMu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				rec := fmt.Sprintf("g%d-%d", g, i)
				if err := j.Wait(context.Background(), j.Append([]byte(rec))); err != nil {
					os.Exit(3)
				}
				outMu.Lock()
				fmt.Fprintln(w, rec)
				w.Flush()
				outMu.Unlock()
			}
		}()
	}
	wg.Wait()
}
