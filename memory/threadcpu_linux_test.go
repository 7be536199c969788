//go:build linux

package memory

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time (user + system) the calling OS thread has used
// so far; the caller keeps its goroutine on the thread
// (runtime.LockOSThread).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

const haveThreadCPU = true
