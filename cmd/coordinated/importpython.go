package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/pyimport"
)

// runImportPython is `coordinated import-python`: it loads one Python
// snapshot and the action logs after it into any backend, once, and prints
// what it stored.
func runImportPython(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("coordinated import-python", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts := &options{stallTimeout: 10 * time.Minute}
	opts.storage.register(fs)
	replace := fs.Bool("replace", false, "replace work specs of the same names already in the backend (else it refuses)")
	level := fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: coordinated import-python [-backend ...] [-data-dir ...] [-replace] SNAPSHOT [LOG...]\n\n"+
			"Loads a Python coordinated snapshot (checked against its .md5 file when there is one;\n"+
			".gz, .bz2 and .xz by suffix) and replays the action logs given after it, in order,\n"+
			"into the backend. Nothing is stored unless everything reads. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return errUsage
	}
	explicit := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if err := opts.storage.check(explicit, stderr); err != nil {
		return err
	}
	if err := opts.storage.checkDataDir(stderr); err != nil {
		return err
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintf(stderr, "coordinated import-python: -log-level: %v\n", err)
		return errUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	src := pyimport.Source{Snapshot: fs.Arg(0), Logs: fs.Args()[1:]}
	if err := pyimport.CheckSidecar(src.Snapshot); err != nil {
		return err
	}
	b, err := openBackend(ctx, opts, coordinate.SystemClock{}, log)
	if err != nil {
		return err
	}
	ns, err := b.Namespace(ctx, "")
	var sum *pyimport.Summary
	if err == nil {
		sum, err = importPython(ctx, ns, src, *replace, log)
	}
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if errors.Is(err, pyimport.ErrSpecsExist) {
			return fmt.Errorf("%w (run again with -replace to replace them)", err)
		}
		return err
	}
	fmt.Fprintf(stdout, "imported %s and %d action logs into %s:\n\n", src.Snapshot, len(src.Logs), storageLabel(opts))
	return sum.WriteTable(stdout)
}

// storageLabel names the backend for messages.
func storageLabel(opts *options) string {
	if !isPostgresURL(opts.backend) && !opts.volatile {
		return "the memory backend in " + opts.dataDir
	}
	return backendLabel(opts.backend)
}
