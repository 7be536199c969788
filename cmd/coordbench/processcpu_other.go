//go:build !unix

package main

import "time"

// processCPU is 0 here: this system has no getrusage, so loadgen_cpu is
// not measured.
func processCPU() time.Duration { return 0 }
