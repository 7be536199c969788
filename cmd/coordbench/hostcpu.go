package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
)

// hostCPU is the machine's CPU time so far, every processor together, in
// the kernel's clock ticks: how much of it was idle (idle and iowait)
// and how much in all. A workload's share of idle time tells whether the
// run waited for processors (near 0) or for something else: a sync, a
// wake-up, a round trip (docs/performance.md, "The machine's idle
// processors").
type hostCPU struct {
	idle, total uint64
}

// idleSince is the fraction of the machine's CPU time idle between
// earlier and h, and false when nothing can be said (no ticks between
// them, or either reading missing).
func (h hostCPU) idleSince(earlier hostCPU) (float64, bool) {
	if h.total == 0 || earlier.total == 0 || h.total <= earlier.total || h.idle < earlier.idle {
		return 0, false
	}
	return float64(h.idle-earlier.idle) / float64(h.total-earlier.total), true
}

// readHostCPU reads /proc/stat. Where there is none (not Linux) it
// returns the zero hostCPU, which idleSince reports as unknown.
func readHostCPU() hostCPU {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return hostCPU{}
	}
	defer f.Close()
	h, err := parseHostCPU(f)
	if err != nil {
		return hostCPU{}
	}
	return h
}

// parseHostCPU reads the "cpu" line of /proc/stat: user, nice, system,
// idle, iowait, irq, softirq and steal ticks (guest time is already part
// of user and nice, so the fields after steal are not added).
func parseHostCPU(r io.Reader) (hostCPU, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) == 0 || string(fields[0]) != "cpu" {
			continue
		}
		if len(fields) < 5 {
			return hostCPU{}, fmt.Errorf("/proc/stat: cpu line has %d fields", len(fields)-1)
		}
		var h hostCPU
		for i, f := range fields[1:min(len(fields), 9)] {
			n, err := strconv.ParseUint(string(f), 10, 64)
			if err != nil {
				return hostCPU{}, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			h.total += n
			if i == 3 || i == 4 { // idle, iowait
				h.idle += n
			}
		}
		return h, nil
	}
	if err := sc.Err(); err != nil {
		return hostCPU{}, err
	}
	return hostCPU{}, fmt.Errorf("/proc/stat: no cpu line")
}
