package journal

import (
	"os"
	"time"
)

// gatherTimer wakes the gathering flusher (gather.go) at its deadline,
// which is a fraction of a millisecond away. A runtime timer that short
// fires a millisecond or more late when every processor is idle, as they
// are while the connections the flusher waits for are on the network: the
// runtime's netpoller then sleeps in whole milliseconds
// (runtime/netpoll_epoll.go, Go 1.26). On Linux the deadline is a timerfd
// read through the netpoller instead, whose readiness wakes it when the
// kernel's timer expires; elsewhere, or if the timerfd cannot be made, a
// runtime timer. Used by the flush loop only.
type gatherTimer struct {
	c    chan struct{} // receives once an armed deadline has passed (capacity 1)
	fd   int           // the timerfd (with f), or
	f    *os.File
	done chan struct{} // closed when the timerfd's reader exits
	rt   *time.Timer   // the runtime timer used instead
}

func newGatherTimer() *gatherTimer {
	t := &gatherTimer{c: make(chan struct{}, 1)}
	if f, fd, err := openTimerfd(); err == nil {
		t.f, t.fd, t.done = f, fd, make(chan struct{})
		go t.read()
		return t
	}
	t.rt = time.AfterFunc(time.Hour, t.fire)
	t.rt.Stop()
	return t
}

func (t *gatherTimer) fire() {
	select {
	case t.c <- struct{}{}:
	default:
	}
}

// read turns the timerfd's expirations into sends on c until it is closed.
func (t *gatherTimer) read() {
	defer close(t.done)
	var b [8]byte // the expiration count
	for {
		if _, err := t.f.Read(b[:]); err != nil {
			return
		}
		t.fire()
	}
}

// arm sets the deadline d from now, dropping an expiry not yet received
// (one arriving late is harmless: gather checks the time again).
func (t *gatherTimer) arm(d time.Duration) {
	select {
	case <-t.c:
	default:
	}
	if t.f == nil || setTimerfd(t.fd, max(d, time.Microsecond)) != nil {
		t.rt.Reset(d)
	}
}

// disarm cancels the deadline.
func (t *gatherTimer) disarm() {
	if t.f != nil {
		_ = setTimerfd(t.fd, 0)
	}
	if t.rt != nil {
		t.rt.Stop()
	}
}

// close releases the timerfd and waits for its reader.
func (t *gatherTimer) close() {
	if t.rt != nil {
		t.rt.Stop()
	}
	if t.f != nil {
		t.f.Close()
		<-t.done
	}
}
