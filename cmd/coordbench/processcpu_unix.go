//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU is the user plus system CPU time this process has used, or 0
// where the system cannot tell.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
