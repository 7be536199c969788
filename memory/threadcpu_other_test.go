//go:build !linux

package memory

import "time"

// threadCPU is not measured here: holdTimer reports no CPU time per hold.
func threadCPU() time.Duration { return 0 }

const haveThreadCPU = false
