package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"time"
)

// latencies collects the duration of every call, per RPC method. Each
// connection goroutine owns one; they are merged when a workload ends.
type latencies map[string][]time.Duration

func (l latencies) add(method string, d time.Duration) { l[method] = append(l[method], d) }

// merge appends every sample of other to l.
func (l latencies) merge(other latencies) {
	for m, ds := range other {
		l[m] = append(l[m], ds...)
	}
}

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted samples: the smallest sample with at least p% of samples <= it.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// methodStats is the report of one RPC method in one workload.
type methodStats struct {
	Method string  `json:"method"`
	Calls  int     `json:"calls"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// result is the report of one workload.
type result struct {
	Workload    string        `json:"workload"`
	Units       int           `json:"units"`
	Seconds     float64       `json:"seconds"`
	UnitsPerSec float64       `json:"units_per_s"`
	Methods     []methodStats `json:"methods"`
	// LoadGenCPUSeconds is the CPU time the load generator itself used
	// during the timed part: on a shared machine it is taken from the
	// daemon, so a report is read together with it.
	LoadGenCPUSeconds float64 `json:"loadgen_cpu_s"`
	// HostIdle is the share of the whole machine's CPU time (every
	// processor, every process) that was idle during the timed part, nil
	// where the system does not say (hostcpu.go).
	HostIdle *float64 `json:"host_idle,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// newResult summarises a workload: units processed in elapsed wall time and
// the latency distribution of each method, methods sorted by name.
func newResult(workload string, units int, elapsed time.Duration, lat latencies) result {
	r := result{Workload: workload, Units: units, Seconds: elapsed.Seconds()}
	if elapsed > 0 {
		r.UnitsPerSec = float64(units) / elapsed.Seconds()
	}
	methods := make([]string, 0, len(lat))
	for m := range lat {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	for _, m := range methods {
		ds := slices.Clone(lat[m])
		slices.Sort(ds)
		r.Methods = append(r.Methods, methodStats{
			Method: m,
			Calls:  len(ds),
			P50Ms:  ms(percentile(ds, 50)),
			P99Ms:  ms(percentile(ds, 99)),
			MaxMs:  ms(percentile(ds, 100)),
		})
	}
	return r
}

// writeText prints one line for the workload and one per method.
func (r result) writeText(w io.Writer) error {
	idle := ""
	if r.HostIdle != nil {
		idle = fmt.Sprintf(" host_idle=%.0f%%", 100**r.HostIdle)
	}
	if _, err := fmt.Fprintf(w, "%-14s units=%-8d seconds=%-8.3f units/s=%-8.0f loadgen_cpu=%.3fs%s\n",
		r.Workload, r.Units, r.Seconds, r.UnitsPerSec, r.LoadGenCPUSeconds, idle); err != nil {
		return err
	}
	for _, m := range r.Methods {
		if _, err := fmt.Fprintf(w, "%-14s   rpc=%-18s calls=%-8d p50=%.3fms p99=%.3fms max=%.3fms\n",
			r.Workload, m.Method, m.Calls, m.P50Ms, m.P99Ms, m.MaxMs); err != nil {
			return err
		}
	}
	return nil
}

// writeJSON prints the workload as one JSON object on one line.
func (r result) writeJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// stopwatch measures a timed section's wall time, the CPU time this
// process used meanwhile and the machine's idle share.
type stopwatch struct {
	wall time.Time
	cpu  time.Duration
	host hostCPU
}

func startStopwatch() stopwatch {
	return stopwatch{wall: time.Now(), cpu: processCPU(), host: readHostCPU()}
}

// result summarises the section as newResult does, with the CPU times.
func (s stopwatch) result(workload string, units int, lat latencies) result {
	r := newResult(workload, units, time.Since(s.wall), lat)
	r.LoadGenCPUSeconds = (processCPU() - s.cpu).Seconds()
	if idle, ok := readHostCPU().idleSince(s.host); ok {
		r.HostIdle = &idle
	}
	return r
}
