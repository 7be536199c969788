package testdaemon

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// LossyProxy forwards TCP to a daemon. Armed, it drops the next reply the
// daemon sends and closes both ends: the request was applied, its reply
// lost. CloseAll closes every connection, as a daemon restart does.
type LossyProxy struct {
	Addr  string
	Armed atomic.Bool  // drop the next reply
	Conns atomic.Int32 // connections accepted

	mu   sync.Mutex
	open []net.Conn
}

// NewLossyProxy starts a LossyProxy to target; it stops with the test.
func NewLossyProxy(t testing.TB, target string) *LossyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &LossyProxy{Addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.Conns.Add(1)
			p.mu.Lock()
			p.open = append(p.open, c, s)
			p.mu.Unlock()
			var once sync.Once
			closeBoth := func() { once.Do(func() { c.Close(); s.Close() }) }
			go func() { io.Copy(s, c); closeBoth() }()
			go func() {
				defer closeBoth()
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						if p.Armed.CompareAndSwap(true, false) {
							return // the reply is lost
						}
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

// CloseAll closes every connection, as a daemon restart does.
func (p *LossyProxy) CloseAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.open {
		c.Close()
	}
	p.open = nil
}
