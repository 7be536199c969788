package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
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
	dataDir        string
	version        bool
}

// parseOptions reads the command line.
func parseOptions(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("coordinated", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:5932", "`address` to serve CBOR-RPC on; \":5932\" opens it to the network")
	fs.StringVar(&o.backend, "backend", "memory", "storage: \"memory\", or a postgres:// or postgresql:// `URL`")
	fs.StringVar(&o.configFile, "config", "", "YAML `file` returned by get_config; coordinate.job_queue.limit_completed_count/_age set the archive policy")
	fs.Int64Var(&o.maxRequestSize, "max-request-size", defaultMaxRequestSize, "largest request in `bytes`; a connection sending more is closed")
	level := fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	fs.BoolVar(&o.enforceMinGB, "enforce-min-gb", false, "skip work specs whose min_gb exceeds the worker's available_gb")
	fs.StringVar(&o.dataDir, "data-dir", "", "`directory` for the memory backend's journal (accepted; not used yet)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
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
	if o.backend != "memory" && !isPostgresURL(o.backend) {
		fmt.Fprintf(stderr, "coordinated: -backend must be \"memory\" or a postgres:// URL, not %q\n", o.backend)
		return nil, errUsage
	}
	return o, nil
}

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}
