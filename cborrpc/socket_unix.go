//go:build unix

package cborrpc

import (
	"errors"
	"net"
	"syscall"
)

// peerClosed reports errPeerClosed when the client has closed its side of
// the connection (or reset it), looking without reading or blocking. It
// reports nil when it cannot tell.
func peerClosed(nc net.Conn) error {
	raw := socket(nc)
	if raw == nil {
		return nil
	}
	var closed bool
	raw.Read(func(fd uintptr) bool { //nolint:errcheck // only the callback's findings matter
		closed, _ = peek(fd)
		return true // never wait for readiness
	})
	if closed {
		return errPeerClosed
	}
	return nil
}

// writeNow writes as much of b as the socket takes without waiting, and
// returns how much that was; an error only if writing failed.
func writeNow(nc net.Conn, b []byte) (n int, err error) {
	raw := socket(nc)
	if raw == nil {
		return 0, nil
	}
	rerr := raw.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, werr := syscall.Write(int(fd), b[n:])
			n += max(m, 0)
			if werr == syscall.EINTR || werr == nil && m > 0 {
				continue
			}
			if werr != syscall.EAGAIN {
				err = werr // nil when the socket took nothing without saying why
			}
			break
		}
		return true // never wait for the socket
	})
	if err == nil && rerr != nil {
		err = rerr
	}
	return n, err
}

// socket is the connection's socket, or nil when it does not expose one
// (a net.Pipe, a wrapper without SyscallConn).
func socket(nc net.Conn) syscall.RawConn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// awaitPeerClosed blocks until the client's side of the connection has
// something to say: it reports errPeerClosed when that is the end of its
// stream (or a reset), nil when it is bytes of a next request (the client
// is alive, pipelining), and the read's error when the wait was ended
// (a read deadline) or the socket cannot be watched. It reads nothing: the
// kernel keeps the bytes for the connection's reader. It waits in the
// runtime's network poller, not in a thread.
func awaitPeerClosed(nc net.Conn) error {
	raw := socket(nc)
	if raw == nil {
		return errCannotWatch
	}
	var closed bool
	err := raw.Read(func(fd uintptr) bool {
		var again bool
		closed, again = peek(fd)
		return !again // nothing yet: wait for readiness
	})
	switch {
	case closed:
		return errPeerClosed
	case err != nil:
		return err
	}
	return nil
}

// peek looks at the socket fd without reading or blocking: closed when
// the client's stream has ended (or was reset), again when nothing has
// arrived yet.
func peek(fd uintptr) (closed, again bool) {
	var buf [1]byte
	n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	if err == syscall.EAGAIN || err == syscall.EINTR {
		return false, true
	}
	return (n == 0 && err == nil) || errors.Is(err, syscall.ECONNRESET), false
}
