package main

import (
	"context"
	"io"
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
	"migrate":       {"copy work specs and units from a running daemon into another", runMigrate},
}

// subcommandOf returns the subcommand the first argument names, if any.
func subcommandOf(args []string) (subcommand, bool) {
	if len(args) == 0 {
		return subcommand{}, false
	}
	sc, ok := subcommands[args[0]]
	return sc, ok
}

func subcommandNames() string {
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
