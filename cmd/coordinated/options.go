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

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
	"github.com/coordinated/coordinated/memory"
	"github.com/coordinated/coordinated/postgres"
)

// errUsage marks a command-line error (already reported to stderr).
var errUsage = errors.New("usage error")

// defaultMaxRequestSize is the largest request accepted (DECISIONS 7): a
// whole `coordinate load` file arrives in one request.
const defaultMaxRequestSize = 256 << 20

// defaultListen is where the daemon serves unless told otherwise.
const defaultListen = "127.0.0.1:5932"

// options are the daemon's settings from the command line and, for the
// Python daemon's keys, its config file (pyflags.go, pyconfig.go).
type options struct {
	// syncDir syncs a directory (nil: journal.SyncDir); tests replace it.
	syncDir func(dir string) error

	listen         string
	listenSet      bool // -listen was given
	configFile     string
	maxRequestSize int64
	logLevel       slog.Level
	enforceMinGB   bool
	stallTimeout   time.Duration
	gcPercent      int  // -gc-percent
	gcPercentSet   bool // given explicitly (else GOGC from the environment wins)
	adaptiveProcs  bool // -adaptive-procs (procs.go)
	version        bool

	// The HTTP listener (--httpd, else coordinate.server.httpd;
	// docs/operations.md); serving is in httpd.go.
	httpd        string
	httpdActions bool
	httpdPprof   bool
	httpdToken   string

	pgTimeout time.Duration // -postgres-timeout (postgres/liveness.go)

	storage // -backend and the memory backend's persistence

	limits limitOptions // connection and request limits (limits.go)

	py pyOptions // the Python daemon's options (pyflags.go)
}

// storage is the backend and, for the memory backend, where and how it
// keeps its data (docs/persistence.md). The daemon and import-python share
// these flags.
type storage struct {
	backend       string
	volatile      bool   // -backend memory: (or -data-dir ""): keep nothing
	dataDir       string // "" when volatile
	dataDirSet    bool   // -data-dir was given explicitly
	dataDirErr    error  // why there is no default data directory, if none
	sync          journal.SyncPolicy
	syncInterval  time.Duration // -sync interval=DURATION
	syncName      string
	recover       bool
	snapshotBytes int64
}

// register adds the storage flags to fs.
func (s *storage) register(fs *flag.FlagSet) {
	fs.StringVar(&s.backend, "backend", "memory", "storage: \"memory\" (kept in -data-dir), \"memory:\" (volatile), or a postgres:// or postgresql:// `URL`")
	defaultDir, dirErr := defaultDataDir()
	s.dataDirErr = dirErr
	fs.StringVar(&s.dataDir, "data-dir", defaultDir, "`directory` where the memory backend keeps its journal and snapshots; \"\" keeps nothing (volatile)")
	fs.StringVar(&s.syncName, "sync", journal.SyncGroup.String(), "journal `policy`: \"group\" fsyncs every group of changes before answering; \"interval=DURATION\" answers once written and fsyncs at most every DURATION (survives a crash of the daemon; a power loss loses at most about DURATION); \"none\" only writes them (survives a crash of the daemon, not of the machine)")
	fs.BoolVar(&s.recover, "recover", false, "start even if the journal is damaged before its end, keeping what can be read (damaged files are renamed aside)")
	fs.Int64Var(&s.snapshotBytes, "snapshot-bytes", memory.DefaultSnapshotBytes, "take a snapshot once the journal has grown by this many `bytes`")
}

// check validates the storage flags after parsing; explicit names the
// flags given on the command line.
func (s *storage) check(explicit map[string]bool, stderr io.Writer) error {
	if s.backend != "memory" && s.backend != "memory:" && !isPostgresURL(s.backend) {
		fmt.Fprintf(stderr, "coordinated: -backend must be \"memory\", \"memory:\" (volatile) or a postgres:// URL, not %q\n", s.backend)
		return errUsage
	}
	s.dataDirSet = explicit["data-dir"]
	var err error
	if s.sync, s.syncInterval, err = journal.ParseSync(s.syncName); err != nil {
		fmt.Fprintf(stderr, "coordinated: -sync: %v\n", err)
		return errUsage
	}
	if s.snapshotBytes <= 0 {
		fmt.Fprintln(stderr, "coordinated: -snapshot-bytes must be positive")
		return errUsage
	}
	if s.backend == "memory:" || (s.dataDirSet && s.dataDir == "") {
		s.volatile, s.dataDir = true, ""
	}
	return nil
}

// checkDataDir fails when a persistent memory backend has no directory.
func (s *storage) checkDataDir(stderr io.Writer) error {
	if s.backend != "memory:" && !isPostgresURL(s.backend) && !s.volatile && s.dataDir == "" {
		fmt.Fprintf(stderr, "coordinated: no default data directory (%v); pass -data-dir DIR, or -data-dir \"\" for a volatile daemon\n", s.dataDirErr)
		return errUsage
	}
	return nil
}

// register adds the daemon's own flags to fs. Another flag is one line
// here; the Python daemon's flags are in pyflags.go.
func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.listen, "listen", defaultListen, "`address` to serve CBOR-RPC on; \":5932\" opens it to the network (the same as --host and --port)")
	fs.StringVar(&o.configFile, "config", "", "the Python daemon's YAML config `file` (also -c): returned by get_config; coordinate.server and coordinate.job_queue are read (docs/compat.md)")
	fs.Int64Var(&o.maxRequestSize, "max-request-size", defaultMaxRequestSize, "largest request in `bytes`; a connection sending more is closed")
	fs.TextVar(&o.logLevel, "log-level", slog.LevelInfo, "log `level`: debug, info, warn or error (-v, -q and --debug adjust it)")
	fs.BoolVar(&o.enforceMinGB, "enforce-min-gb", false, "skip work specs whose min_gb exceeds the worker's available_gb")
	fs.DurationVar(&o.stallTimeout, "stall-timeout", coordinate.DefaultStallTimeout, "report a work-unit group as stalled after this long with runnable units and no progress")
	fs.DurationVar(&o.pgTimeout, "postgres-timeout", postgres.DefaultRequestTimeout, "with a postgres backend, fail a request with an error once the database has not answered for this `long` (long work goes on while the database answers)")
	fs.IntVar(&o.gcPercent, "gc-percent", defaultGCPercent, "Go garbage-collector target `percent` (as GOGC; the GOGC environment variable wins unless this flag is given)")
	fs.BoolVar(&o.adaptiveProcs, "adaptive-procs", true, "under -sync group, run one processor more than Go's default GOMAXPROCS while the journal's groups each answer several waiting clients, and the default again when they answer about one; false keeps the default. Nothing changes when the GOMAXPROCS environment variable is set")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.StringVar(&o.httpd, "httpd", "", "serve the status page, /metrics, /healthz, /readyz and the /ui/ dashboard on `[ip]:port` (\":5933\" means 127.0.0.1:5933; give 0.0.0.0 to open it to the network); else coordinate.server.httpd")
	fs.BoolVar(&o.httpdActions, "httpd-actions", false, "allow the dashboard's actions: pause/resume, retry, reprioritize, cancel group (without -httpd-token, only for requests that name the daemon by IP address or as localhost)")
	fs.BoolVar(&o.httpdPprof, "httpd-pprof", false, "serve net/http/pprof under /debug/pprof/ on the -httpd listener")
	fs.StringVar(&o.httpdToken, "httpd-token", "", "require this `token` (bearer, or basic-auth password) for dashboard actions")
	o.limits.register(fs)
	o.storage.register(fs)
}

// flagSet returns the daemon's flags, ours and the Python daemon's, set
// up to fill o.
func (o *options) flagSet(stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("coordinated", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(fs, stderr) }
	o.register(fs)
	o.py.register(fs, &o.configFile)
	return fs
}

// parseOptions reads the command line and, with -config/-c, the Python
// daemon's settings in the config file (flags win over the file).
func parseOptions(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := o.flagSet(stderr)
	args, err := expandAbbrev(fs, expandCountFlags(args))
	if err != nil {
		fmt.Fprintf(stderr, "coordinated: %v\n", err)
		return nil, errUsage
	}
	explicit, err := parseFlags(fs, args, &o.py, stderr)
	if err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "coordinated: unexpected argument %q (subcommands: %s)\n", fs.Arg(0), subcommandNames())
		return nil, errUsage
	}
	if o.maxRequestSize <= 0 {
		fmt.Fprintln(stderr, "coordinated: -max-request-size must be positive")
		return nil, errUsage
	}
	if err := o.limits.check(stderr); err != nil {
		return nil, err
	}
	if o.pgTimeout <= 0 {
		fmt.Fprintln(stderr, "coordinated: -postgres-timeout must be positive")
		return nil, errUsage
	}
	if o.stallTimeout <= 0 {
		fmt.Fprintln(stderr, "coordinated: -stall-timeout must be positive")
		return nil, errUsage
	}
	if err := o.storage.check(explicit, stderr); err != nil {
		return nil, err
	}
	o.listenSet = explicit["listen"]
	o.gcPercentSet = explicit["gc-percent"]
	if err := o.applyPython(explicit, stderr); err != nil {
		return nil, err
	}
	if err := o.storage.checkDataDir(stderr); err != nil {
		return nil, err
	}
	return o, nil
}

// parseFlags parses args into fs and returns the names of the flags given.
// --dump-config takes an optional value, which may also follow it as the
// next argument (as argparse allows); flags after it are parsed too.
func parseFlags(fs *flag.FlagSet, args []string, py *pyOptions, stderr io.Writer) (map[string]bool, error) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsage
		}
		if py.dumpConfig == "" || py.dumpConfigValued || fs.NArg() == 0 || !isDumpWhat(fs.Arg(0)) {
			break
		}
		py.dumpConfig, py.dumpConfigValued = fs.Arg(0), true
		args = fs.Args()[1:]
	}
	explicit := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	return explicit, nil
}

// usage prints the flags, ours and the Python daemon's.
func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "Usage: coordinated [flags]\n       coordinated SUBCOMMAND [flags] (-h after it for its flags)\n\nSubcommands:\n")
	for _, name := range strings.Split(subcommandNames(), ", ") {
		fmt.Fprintf(w, "  %-14s %s\n", name, subcommands[name].summary)
	}
	fmt.Fprintf(w, "\nFlags (- and -- are alike; the Python daemon's long options, such as --snapshot-dir and --port, may be abbreviated as argparse allowed: --snap, --po):\n")
	fs.PrintDefaults()
}

// defaultGCPercent is the garbage collector's target unless GOGC or
// -gc-percent says otherwise. A queue's heap is mostly long-lived work
// units, which every collection must mark again, so collecting a quarter
// as often as Go's default keeps large queues draining nearly as fast as
// small ones (docs/persistence.md has the figures), at the price of a peak
// heap up to five times the live one.
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
