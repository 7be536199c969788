package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// pyOptions are the Python daemon's command-line options (coordinate
// 0.1.5's run.py, with yakonfig's -c/--dump-config and dblogger's
// -v/-q/--debug), and what they and the config file resolve to.
type pyOptions struct {
	host        string
	port        int
	pidFile     string
	snapshotDir string
	httpdSet    bool // --httpd was given (else coordinate.server.httpd)
	verbose     counter
	quiet       counter
	debug       stringList // repeatable (migrate.go)
	// dumpConfig is "" or what --dump-config asked for: effective, full
	// or default; dumpConfigValued says a value was given.
	dumpConfig       string
	dumpConfigValued bool

	// Resolved by applyPython.
	config *pyConfig // nil without -config
	// snapshotFormat and logFormat locate the Python daemon's files to
	// import at start ("" = do not import); see takeover.go.
	snapshotFormat string
	logFormat      string
}

// pyLongOptions are the Python daemon's long options ("--" and a name),
// the ones argparse let a command line abbreviate to any unambiguous
// prefix (abbrev.go): run.py's, yakonfig's, dblogger's and argparse's own
// --help, each also a flag registered here or in options.go.
var pyLongOptions = []string{"help", "host", "port", "pid", "snapshot-dir", "httpd", "config", "dump-config", "verbose", "quiet", "debug"}

// register adds the Python daemon's flags to fs; configFile is -config's
// variable, which -c shares.
func (p *pyOptions) register(fs *flag.FlagSet, configFile *string) {
	fs.StringVar(configFile, "c", "", "same as -config (the Python daemon's -c/--config)")
	fs.StringVar(&p.host, "host", "", "listen on this `address` (0.0.0.0 for all); with --port, the same as -listen")
	fs.IntVar(&p.port, "port", 0, "listen on this TCP `port` (default 5932)")
	fs.IntVar(&p.port, "p", 0, "same as --port")
	fs.StringVar(&p.pidFile, "pid", "", "write the process id to `file` (removed again on a clean exit)")
	fs.StringVar(&p.snapshotDir, "snapshot-dir", "", "the Python daemon's snapshot `directory`: its newest complete snapshot is imported into a new data directory, DIR/coordinated unless -data-dir is given (docs/migration.md)")
	fs.Var(&p.verbose, "v", "log more (repeatable: -v is debug)")
	fs.Var(&p.verbose, "verbose", "same as -v")
	fs.Var(&p.quiet, "q", "log less (repeatable: -q warnings, -qq errors)")
	fs.Var(&p.quiet, "quiet", "same as -q")
	fs.Var(&p.debug, "debug", "enable debug logging (the Python daemon's per-`logger` switch; here it turns on all debug logging)")
	fs.Var(dumpConfigFlag{p}, "dump-config", "print the configuration as YAML and exit: `[effective|full|default]` (effective when no value is given)")
}

// applyPython resolves the Python daemon's options against the config
// file: flags win over the file, as in Python.
func (o *options) applyPython(explicit map[string]bool, stderr io.Writer) error {
	p := &o.py
	if o.configFile != "" {
		cfg, err := readPyConfig(o.configFile)
		if err != nil {
			fmt.Fprintf(stderr, "coordinated: -config: %v\n", err)
			return errUsage
		}
		p.config = cfg
	}
	cfg := p.config

	hostSet, portSet := explicit["host"], explicit["port"] || explicit["p"]
	if o.listenSet && (hostSet || portSet) {
		fmt.Fprintln(stderr, "coordinated: give -listen, or --host and --port, not both")
		return errUsage
	}
	if !o.listenSet {
		host, port := "127.0.0.1", 5932
		if h, ok := cfg.serverString("host"); ok {
			host = h
		}
		if n, ok := cfg.serverInt("port"); ok {
			port = n
		}
		if hostSet {
			host = p.host
		}
		if portSet {
			port = p.port
		}
		if port < 0 || port > 65535 {
			fmt.Fprintf(stderr, "coordinated: --port %d is not a TCP port\n", port)
			return errUsage
		}
		o.listen = net.JoinHostPort(host, strconv.Itoa(port))
	}

	// --httpd (options.go) falls back to the file, as in Python.
	p.httpdSet = explicit["httpd"]
	if !p.httpdSet {
		o.httpd, _ = cfg.serverString("httpd")
	}
	if o.httpd != "" && !strings.Contains(o.httpd, ":") {
		fmt.Fprintf(stderr, "coordinated: --httpd needs ip:port or :port, got %q\n", o.httpd)
		return errUsage
	}

	// -v and -q move the level a step each (dblogger's console level);
	// --debug turns debug logging on.
	o.logLevel += slog.Level(4 * (int(p.quiet) - int(p.verbose)))
	if len(p.debug) > 0 && o.logLevel > slog.LevelDebug {
		o.logLevel = slog.LevelDebug
	}

	// The Python daemon's snapshots: --snapshot-dir, else
	// snapshot_path_format with do_recover: true.
	recoverFlag, recoverSet := cfg.jobQueueBool("do_recover")
	switch {
	case p.snapshotDir != "":
		p.snapshotFormat = filepath.Join(p.snapshotDir, "snapshot_{timestamp}")
		if recoverSet && !recoverFlag {
			p.snapshotFormat = "" // do_recover: false said not to
		}
		if !o.dataDirSet && !isPostgresURL(o.backend) && !o.volatile {
			o.dataDir = filepath.Join(p.snapshotDir, "coordinated")
		}
	case recoverFlag:
		p.snapshotFormat, _ = cfg.jobQueueString("snapshot_path_format")
	}
	if p.snapshotFormat != "" {
		p.logFormat, _ = cfg.jobQueueString("log_path_format")
		for _, f := range []string{p.snapshotFormat, p.logFormat} {
			if f != "" && !strings.Contains(f, "{timestamp}") {
				fmt.Fprintf(stderr, "coordinated: path format %q has no {timestamp}\n", f)
				return errUsage
			}
		}
	}
	return nil
}

// counter is a repeatable boolean flag counting its uses (-v -v).
type counter int

func (c *counter) String() string   { return strconv.Itoa(int(*c)) }
func (c *counter) IsBoolFlag() bool { return true }
func (c *counter) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	if b {
		*c++
	}
	return nil
}

// dumpConfigFlag is --dump-config, whose value is optional.
type dumpConfigFlag struct{ p *pyOptions }

func (d dumpConfigFlag) String() string {
	if d.p == nil {
		return ""
	}
	return d.p.dumpConfig
}
func (d dumpConfigFlag) IsBoolFlag() bool { return true }
func (d dumpConfigFlag) Set(s string) error {
	switch {
	case s == "true":
		d.p.dumpConfig, d.p.dumpConfigValued = "effective", false
	case isDumpWhat(s):
		d.p.dumpConfig, d.p.dumpConfigValued = s, true
	default:
		return fmt.Errorf("want effective, full or default, not %q", s)
	}
	return nil
}

func isDumpWhat(s string) bool { return s == "effective" || s == "full" || s == "default" }

// countFlags matches argparse's combined counting flags: -vv, -qqq.
var countFlags = regexp.MustCompile(`^-(v{2,}|q{2,})$`)

// attachedPort matches argparse's -pPORT.
var attachedPort = regexp.MustCompile(`^-p([0-9]+)$`)

// expandCountFlags turns argparse's short forms into what the flag
// package reads: -vv into -v -v, -p5932 into -p 5932.
func expandCountFlags(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if countFlags.MatchString(a) {
			for range len(a) - 1 {
				out = append(out, a[:2])
			}
			continue
		}
		if m := attachedPort.FindStringSubmatch(a); m != nil {
			out = append(out, "-p", m[1])
			continue
		}
		out = append(out, a)
	}
	return out
}
