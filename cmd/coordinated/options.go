package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coordinated/coordinated/journal"
	"github.com/coordinated/coordinated/memory"
)

// errUsage marks a command-line error (already reported by the flag set).
var errUsage = errors.New("usage error")

// defaultMaxRequestSize is the largest request accepted (DECISIONS 7): a
// whole `coordinate load` file arrives in one request.
const defaultMaxRequestSize = 256 << 20

// options are the daemon's command-line settings.
type options struct {
	listen         string
	backend        string
	configFile     string
	maxRequestSize int64
	logLevel       slog.Level
	enforceMinGB   bool
	stallTimeout   time.Duration
	gcPercent      int  // -gc-percent
	gcPercentSet   bool // given explicitly (else GOGC from the environment wins)
	version        bool

	// The HTTP listener (--httpd, docs/operations.md); serving is in httpd.go.
	httpd        string
	httpdActions bool
	httpdPprof   bool
	httpdToken   string

	// Persistence of the memory backend (docs/persistence.md).
	volatile      bool   // -backend memory: (or -data-dir ""): keep nothing
	dataDir       string // "" when volatile
	dataDirSet    bool   // -data-dir was given explicitly
	sync          journal.SyncPolicy
	recover       bool
	snapshotBytes int64
}

// parseOptions reads the command line.
func parseOptions(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("coordinated", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:5932", "`address` to serve CBOR-RPC on; \":5932\" opens it to the network")
	fs.StringVar(&o.backend, "backend", "memory", "storage: \"memory\" (kept in -data-dir), \"memory:\" (volatile), or a postgres:// or postgresql:// `URL`")
	fs.StringVar(&o.configFile, "config", "", "YAML `file` returned by get_config; coordinate.job_queue.limit_completed_count/_age set the archive policy")
	fs.Int64Var(&o.maxRequestSize, "max-request-size", defaultMaxRequestSize, "largest request in `bytes`; a connection sending more is closed")
	level := fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	fs.BoolVar(&o.enforceMinGB, "enforce-min-gb", false, "skip work specs whose min_gb exceeds the worker's available_gb")
	defaultDir, dirErr := defaultDataDir()
	fs.StringVar(&o.dataDir, "data-dir", defaultDir, "`directory` where the memory backend keeps its journal and snapshots; \"\" keeps nothing (volatile)")
	syncName := fs.String("sync", journal.SyncGroup.String(), "journal `policy`: \"group\" fsyncs every group of changes before answering; \"none\" only writes them (survives a crash of the daemon, not of the machine)")
	fs.BoolVar(&o.recover, "recover", false, "start even if the journal is damaged before its end, keeping what can be read (damaged files are renamed aside)")
	fs.Int64Var(&o.snapshotBytes, "snapshot-bytes", memory.DefaultSnapshotBytes, "take a snapshot once the journal has grown by this many `bytes`")
	fs.DurationVar(&o.stallTimeout, "stall-timeout", 10*time.Minute, "report a work-unit group as stalled after this long with runnable units and no progress")
	fs.IntVar(&o.gcPercent, "gc-percent", defaultGCPercent, "Go garbage-collector target `percent` (as GOGC; the GOGC environment variable wins unless this flag is given)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.StringVar(&o.httpd, "httpd", "", "serve the status page, /metrics, /healthz, /readyz and the /ui/ dashboard on `[ip]:port` (\":5933\" means 127.0.0.1:5933; give 0.0.0.0 to open it to the network)")
	fs.BoolVar(&o.httpdActions, "httpd-actions", false, "allow the dashboard's actions: pause/resume, retry, reprioritize, cancel group")
	fs.BoolVar(&o.httpdPprof, "httpd-pprof", false, "serve net/http/pprof under /debug/pprof/ on the -httpd listener")
	fs.StringVar(&o.httpdToken, "httpd-token", "", "require this `token` (bearer, or basic-auth password) for dashboard actions")
	err := fs.Parse(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "coordinated: unexpected argument %q\n", fs.Arg(0))
		return nil, errUsage
	}
	if err := o.logLevel.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintf(stderr, "coordinated: -log-level: %v\n", err)
		return nil, errUsage
	}
	if o.maxRequestSize <= 0 {
		fmt.Fprintln(stderr, "coordinated: -max-request-size must be positive")
		return nil, errUsage
	}
	if o.backend != "memory" && o.backend != "memory:" && !isPostgresURL(o.backend) {
		fmt.Fprintf(stderr, "coordinated: -backend must be \"memory\", \"memory:\" (volatile) or a postgres:// URL, not %q\n", o.backend)
		return nil, errUsage
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "data-dir":
			o.dataDirSet = true
		case "gc-percent":
			o.gcPercentSet = true
		}
	})
	if o.sync, err = journal.ParseSyncPolicy(*syncName); err != nil {
		fmt.Fprintf(stderr, "coordinated: -sync: %v\n", err)
		return nil, errUsage
	}
	if o.stallTimeout <= 0 {
		fmt.Fprintln(stderr, "coordinated: -stall-timeout must be positive")
		return nil, errUsage
	}
	if o.snapshotBytes <= 0 {
		fmt.Fprintln(stderr, "coordinated: -snapshot-bytes must be positive")
		return nil, errUsage
	}
	if o.backend == "memory:" || (o.dataDirSet && o.dataDir == "") {
		o.volatile, o.dataDir = true, ""
	}
	if o.backend != "memory:" && !isPostgresURL(o.backend) && !o.volatile && o.dataDir == "" {
		fmt.Fprintf(stderr, "coordinated: no default data directory (%v); pass -data-dir DIR, or -data-dir \"\" for a volatile daemon\n", dirErr)
		return nil, errUsage
	}
	return o, nil
}

// defaultGCPercent is the garbage collector's target unless GOGC or
// -gc-percent says otherwise. A queue's heap is mostly long-lived work
// units, which every collection must mark again; collecting a quarter as
// often as Go's default keeps draining a queue of a million units within
// 10% of draining a small one (issue 3), at the price of a peak heap up to
// five times the live one.
const defaultGCPercent = 400

// defaultDataDir is where a memory daemon keeps its data unless told
// otherwise: $XDG_STATE_HOME/coordinated, else ~/.local/state/coordinated.
func defaultDataDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "coordinated"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", "coordinated"), nil
}

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}
