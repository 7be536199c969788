package main

import (
	"context"
	"io"
	"net"
	"sort"
	"strings"
)

// subcommand is a command other than the daemon, chosen by the first
// argument: `coordinated NAME [flags] [args]`.
type subcommand struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// subcommands are the commands besides the daemon. Another one is one
// line here.
var subcommands = map[string]subcommand{
	"import-python": {"load a Python daemon's snapshot and action logs into a backend", runImportPython},
}

// dispatch runs the subcommand named by the first argument, or else the
// daemon (run).
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- net.Addr) error {
	if len(args) > 0 {
		if sc, ok := subcommands[args[0]]; ok {
			return sc.run(ctx, args[1:], stdout, stderr)
		}
	}
	return run(ctx, args, stdout, stderr, ready)
}

func subcommandNames() string {
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
