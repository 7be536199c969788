//go:build !linux

package journal

import (
	"errors"
	"os"
	"time"
)

// openTimerfd: no timerfd here, the gathering uses a runtime timer.
func openTimerfd() (*os.File, int, error) {
	return nil, 0, errors.New("no timerfd on this platform")
}

func setTimerfd(int, time.Duration) error { return errors.New("no timerfd on this platform") }
