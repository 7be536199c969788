// Command coordbench is a load generator for coordinated (and any daemon
// speaking the legacy coordinate CBOR-RPC protocol). It runs bounded
// workloads shaped like the Python workers' traffic and reports, per
// workload, units/s and the p50/p99 latency of each RPC method, the CPU
// time it used itself and, on Linux, the share of the machine's CPU time
// that was idle meanwhile (host_idle: near 0 when the run waited for
// processors, high when it waited for syncs, wake-ups or round trips).
//
// Usage:
//
//	coordbench -addr 127.0.0.1:5932 [-workload all|add,drain1,...] [-conns 8]
//	           [-units 20000] [-queued 10000,100000,1000000] [-sample 50000] [-per-call 1] [-settle 0s]
//	           [-think 0s] [-seed 1] [-json] [-cpuprofile FILE]
//
// Every workload uses its own work-spec names (prefixed "coordbench_") and
// deletes them when it ends.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// allWorkloads lists the workloads in the order "all" runs them.
var allWorkloads = []string{"add", "drain1", "drain100", "chain", "weighted", "drainN"}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("coordbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:5932", "daemon CBOR-RPC address")
	workloads := fs.String("workload", "all", "comma-separated workloads: "+strings.Join(allWorkloads, ",")+", or all")
	conns := fs.Int("conns", 8, "concurrent connections")
	units := fs.Int("units", 20000, "work units per workload (add, drain1, drain100, chain, weighted)")
	queued := fs.String("queued", "10000,100000,1000000", "drainN: queue depths to preload")
	sample := fs.Int("sample", 50000, "drainN: units drained at each depth (all if fewer are queued)")
	perCall := fs.Int("per-call", 1, "drainN: units each get_work asks for (1 as drain1, 100 as drain100)")
	settle := fs.Duration("settle", 0, "drainN: wait this long after preloading before draining (lets the database finish the maintenance a bulk load sets off, so the sample sees a queue at rest)")
	think := fs.Duration("think", 0, "drain workloads: before finishing each unit, wait a random time below this (a worker doing the work; 0: none)")
	seed := fs.Int64("seed", 1, "seed for key order, payload sizes and think times")
	asJSON := fs.Bool("json", false, "print one JSON object per workload instead of text")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up on a workload after this long")
	cpuProfile := fs.String("cpuprofile", "", "write the load generator's own CPU profile to this `file`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	depths, err := parseCounts(*queued)
	if err != nil {
		fmt.Fprintf(stderr, "coordbench: -queued: %v\n", err)
		return 2
	}
	names, err := parseWorkloads(*workloads)
	if err != nil {
		fmt.Fprintf(stderr, "coordbench: -workload: %v\n", err)
		return 2
	}
	if *settle < 0 || *think < 0 {
		fmt.Fprintln(stderr, "coordbench: -settle and -think must not be negative")
		return 2
	}
	if *conns < 1 || *units < 1 || *sample < 1 || *perCall < 1 {
		fmt.Fprintln(stderr, "coordbench: -conns, -units, -sample and -per-call must be positive")
		return 2
	}

	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "coordbench: -cpuprofile: %v\n", err)
			return 1
		}
		defer stopProfile()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	b := &bench{
		addr:    *addr,
		conns:   *conns,
		units:   *units,
		depths:  depths,
		sample:  *sample,
		perCall: *perCall,
		settle:  *settle,
		think:   *think,
		seed:    *seed,
		timeout: *timeout,
		log:     slog.New(slog.NewTextHandler(stderr, nil)),
	}
	failed := false
	for _, name := range names {
		results, err := b.runWorkload(ctx, name)
		for _, r := range results {
			if *asJSON {
				err = r.writeJSON(stdout)
			} else {
				err = r.writeText(stdout)
			}
			if err != nil {
				fmt.Fprintf(stderr, "coordbench: writing report: %v\n", err)
				return 1
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "coordbench: workload %s: %v\n", name, err)
			failed = true
			if ctx.Err() != nil {
				break
			}
		}
	}
	if failed {
		return 1
	}
	return 0
}

// parseCounts parses a comma-separated list of positive integers.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseWorkloads(s string) ([]string, error) {
	if s == "all" {
		return allWorkloads, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		found := false
		for _, w := range allWorkloads {
			if f == w {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown workload %q (known: %s)", f, strings.Join(allWorkloads, ","))
		}
		out = append(out, f)
	}
	return out, nil
}

// startCPUProfile starts profiling the load generator itself (it shares
// the machine with the daemon, so its own cost matters) and returns the
// function that stops and writes the profile.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
