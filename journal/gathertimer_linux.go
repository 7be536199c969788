//go:build linux

package journal

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// openTimerfd returns a non-blocking timerfd on the monotonic clock as a
// File the netpoller waits on.
func openTimerfd() (*os.File, int, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, 0, err
	}
	return os.NewFile(uintptr(fd), "journal-gather-timerfd"), fd, nil
}

// setTimerfd arms the timerfd to expire once, d from now (0 disarms it).
func setTimerfd(fd int, d time.Duration) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	return unix.TimerfdSettime(fd, 0, &spec, nil)
}
