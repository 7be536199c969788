//go:build unix

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestStopwatchCountsOwnCPU(t *testing.T) {
	w := startStopwatch()
	x := uint64(1)
	deadline := time.Now().Add(5 * time.Second) // bound the loop if CPU time is unavailable
	for start := processCPU(); processCPU()-start < 20*time.Millisecond && time.Now().Before(deadline); {
		for i := 0; i < 100000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	r := w.result("spin", 1, latencies{})
	if r.LoadGenCPUSeconds < 0.02 || x == 0 {
		t.Errorf("loadgen CPU = %vs after spinning 20ms of CPU", r.LoadGenCPUSeconds)
	}
	var text bytes.Buffer
	if err := r.writeText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "loadgen_cpu=") {
		t.Errorf("text report lacks loadgen_cpu: %s", text.String())
	}
}
