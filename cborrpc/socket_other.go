//go:build !unix

package cborrpc

import "net"

// peerClosed cannot look at the socket here: a closed client is only
// noticed when writing fails.
func peerClosed(net.Conn) error { return nil }

// writeNow cannot write without waiting here: the caller's fallback
// goroutine writes everything.
func writeNow(net.Conn, []byte) (int, error) { return 0, nil }

// awaitPeerClosed cannot watch the socket here.
func awaitPeerClosed(net.Conn) error { return errCannotWatch }
