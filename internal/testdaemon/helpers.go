package testdaemon

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/creack/pty"

	"github.com/coordinated/coordinated/client"
)

// Dial returns a client of addr with the Python client's defaults, closed
// when the test ends.
func Dial(t testing.TB, addr string) *client.Client {
	t.Helper()
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// RunOnTerminal runs cmd with its stderr on a pseudo-terminal (stdout
// stays a pipe) and returns stdout, what the terminal showed, and the
// command's error.
func RunOnTerminal(t testing.TB, cmd *exec.Cmd) (stdout, screen string, err error) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	var out, scr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	done := make(chan struct{})
	go func() { scr.ReadFrom(ptmx); close(done) }()
	err = cmd.Wait()
	<-done
	return out.String(), scr.String(), err
}
