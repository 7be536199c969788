package main

import (
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"
)

// TestLoggingConnReachesTheSocket: the CBOR-RPC server looks at a
// connection's socket without blocking (to see that a client hung up
// before its get_work reply, and to write a held reply from the journal's
// flusher); it can only do so through the daemon's logging wrapper if the
// wrapper hands the socket on. Without it both fall back silently: leases
// of undelivered replies stay until they expire, and every held reply is
// written by a goroutine of its own.
func TestLoggingConnReachesTheSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wrapped := &loggingListener{Listener: ln, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	defer wrapped.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	nc, err := wrapped.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sc, ok := nc.(syscall.Conn)
	if !ok {
		t.Fatalf("%T does not expose its socket (syscall.Conn)", nc)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd uintptr
	if err := raw.Control(func(f uintptr) { fd = f }); err != nil || fd == 0 {
		t.Fatalf("Control: fd %d, %v", fd, err)
	}
}
