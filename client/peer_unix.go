//go:build unix

package client

import (
	"net"
	"syscall"
)

// closedByPeer reports whether an idle connection can no longer carry a
// request: the daemon closed it (a restart, say), reset it, or sent bytes
// nobody asked for. It peeks without waiting: a live idle connection has
// nothing to read. (A read with a deadline already past would not even
// look: Go reports the timeout first.)
func closedByPeer(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch err {
		case syscall.EAGAIN, syscall.EINTR: // nothing to read (EWOULDBLOCK is EAGAIN here): open
		default: // reset, EOF (0 bytes) or unexpected bytes
			closed = true
		}
		return true // never wait
	})
	return closed || err != nil
}
