// Command coordinated is the job-queue daemon: it serves the legacy Python
// coordinate CBOR-RPC protocol (default 127.0.0.1:5932) from a memory or
// PostgreSQL backend.
//
// Usage:
//
//	coordinated [-listen ADDR] [-backend memory|memory:|postgres://URL]
//	            [-config FILE] [-max-request-size BYTES] [-log-level LEVEL]
//	            [-enforce-min-gb] [-data-dir DIR] [-sync group|none]
//	            [-recover] [-snapshot-bytes BYTES] [-version]
//	            [the Python daemon's options: -c FILE --host ADDR --port N
//	             --pid FILE --snapshot-dir DIR --httpd [IP]:PORT -v -q
//	             --debug LOGGER --dump-config [WHAT], long ones abbreviable
//	             as argparse allowed: --snap DIR, --po N]
//	coordinated import-python [-backend ...] [-data-dir DIR] [-replace] SNAPSHOT [LOG...]
//	coordinated migrate -from HOST:PORT [-to HOST:PORT] [-spec NAME]...
//	            [-pause-source] [-verify]
//
// The Python daemon's command line and config file work as they did
// (docs/compat.md); with --snapshot-dir its queue is taken over once into
// a new data directory (docs/migration.md). Subcommands are listed in
// subcommands.go.
//
// The memory backend keeps a write-ahead journal and snapshots in -data-dir
// (default $XDG_STATE_HOME/coordinated, else ~/.local/state/coordinated)
// and recovers them on start; -backend memory: or -data-dir "" keeps
// nothing (docs/persistence.md).
//
// `migrate` copies work specs and units from a running daemon into another
// through the legacy RPCs (docs/migration.md).
//
// On SIGINT or SIGTERM it stops accepting connections, answers the
// requests already received, closes the backend (a memory backend writes a
// final snapshot) and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is reported by -version; release builds may set it with
// -ldflags "-X main.version=...".
var version = "devel"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "coordinated:", err)
		os.Exit(1)
	}
}
