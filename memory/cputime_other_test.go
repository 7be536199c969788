//go:build !unix

package memory

import "time"

// processCPU is not measured here: benchmarks report zero.
func processCPU() time.Duration { return 0 }
