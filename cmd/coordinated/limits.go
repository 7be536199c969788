package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/jobserver"
)

// limitOptions are the daemon's resource limits (docs/limits.md): what
// keeps one careless or hostile client from exhausting memory or file
// descriptors. They are kept apart from the other options so that each
// can change without the other.
type limitOptions struct {
	requestBudget  int64 // -request-budget; 0 = derived from memory
	maxConnections int   // -max-connections
	maxUnitData    int64 // -max-unit-data
	maxLockKeys    int   // -max-lock-keys
	maxReplyBytes  int64 // -max-reply-bytes
}

const (
	// defaultMaxConnections is well above the ~1,000 connections real
	// fleets of workers open.
	defaultMaxConnections = 10_000
	// budgetWait is how long a connection over the request budget waits
	// for other requests to finish before it is closed.
	budgetWait = 5 * time.Second
	// reservedFiles are the descriptors kept for everything but client
	// connections: the listener, journal and snapshot files, database
	// connections, an HTTP listener.
	reservedFiles = 128
	// minRequestBudget is the smallest derived budget.
	minRequestBudget = 64 << 20
)

// register adds the limit flags to fs.
func (l *limitOptions) register(fs *flag.FlagSet) {
	fs.Int64Var(&l.requestBudget, "request-budget", 0, "`bytes` of requests in flight across all connections; a connection that needs more waits, then is closed (0: a quarter of the machine's memory)")
	fs.IntVar(&l.maxConnections, "max-connections", defaultMaxConnections, "most concurrent client connections (`n`); more are closed at once (also capped by the open-file limit)")
	fs.Int64Var(&l.maxUnitData, "max-unit-data", jobserver.DefaultMaxUnitData, "largest data of one work unit in `bytes`; larger adds and updates are refused")
	fs.IntVar(&l.maxLockKeys, "max-lock-keys", jobserver.DefaultMaxLockKeys, "most lock paths one lock-service call may name (`n`)")
	fs.Int64Var(&l.maxReplyBytes, "max-reply-bytes", jobserver.DefaultMaxReplyBytes, "unit data one get_work_units or get_work reply carries, in `bytes`; past it the reply lists fewer units (page on with start; get_work leases fewer)")
}

// check validates the limit flags after parsing.
func (l *limitOptions) check(stderr io.Writer) error {
	for _, f := range []struct {
		name string
		v    int64
		zero bool // 0 allowed
	}{
		{"request-budget", l.requestBudget, true},
		{"max-connections", int64(l.maxConnections), false},
		{"max-unit-data", l.maxUnitData, false},
		{"max-lock-keys", int64(l.maxLockKeys), false},
		{"max-reply-bytes", l.maxReplyBytes, false},
	} {
		if f.v < 0 || (f.v == 0 && !f.zero) {
			fmt.Fprintf(stderr, "coordinated: -%s must be positive\n", f.name)
			return errUsage
		}
	}
	return nil
}

// jobserverLimits are the per-call quotas.
func (l *limitOptions) jobserverLimits() jobserver.Limits {
	return jobserver.Limits{MaxUnitData: l.maxUnitData, MaxLockKeys: l.maxLockKeys, MaxReplyBytes: l.maxReplyBytes}
}

// serverLimits raises the open-file limit, settles the connection cap and
// the request budget, logs them once, and returns the server options that
// carry them.
func (l *limitOptions) serverLimits(maxRequestSize int64, log *slog.Logger) cborrpc.ServerOptions {
	files, err := raiseFileLimit()
	if err != nil {
		log.Warn("cannot raise the open-file limit", "err", err)
	}
	conns := l.maxConnections
	if files > 0 && files-reservedFiles < uint64(conns) {
		conns = max(int(files)-reservedFiles, 1)
		log.Warn("connection cap lowered to fit the open-file limit", "max_connections", conns, "open_files", files)
	}
	budget := l.requestBudget
	if budget == 0 {
		budget = derivedRequestBudget(machineMemory())
	}
	if budget < maxRequestSize {
		log.Warn("the request budget is below -max-request-size: larger requests are refused", "request_budget", budget, "max_request_size", maxRequestSize)
	}
	log.Info("limits", "max_connections", conns, "open_files", files, "request_budget", budget,
		"max_request_size", maxRequestSize, "max_unit_data", l.maxUnitData,
		"max_lock_keys", l.maxLockKeys, "max_reply_bytes", l.maxReplyBytes)
	return cborrpc.ServerOptions{
		MaxRequestSize: maxRequestSize,
		Budget:         cborrpc.NewRequestBudget(budget, budgetWait),
		MaxConnections: conns,
	}
}

// derivedRequestBudget is the default budget: a quarter of memory, and
// never below minRequestBudget (0 memory means unknown).
func derivedRequestBudget(memory int64) int64 {
	return max(memory/4, minRequestBudget)
}

// machineMemory returns the memory this process may use: the machine's
// (from /proc/meminfo), or its cgroup's limit when lower; 0 if unknown.
func machineMemory() int64 {
	total := memTotal("/proc/meminfo")
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}

// memTotal reads MemTotal from a meminfo file, in bytes; 0 if unknown.
func memTotal(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
