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
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var closed bool
	var buf [1]byte
	raw.Read(func(fd uintptr) bool { //nolint:errcheck // only the callback's findings matter
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = (n == 0 && err == nil) || errors.Is(err, syscall.ECONNRESET)
		return true // never wait for readiness
	})
	if closed {
		return errPeerClosed
	}
	return nil
}
