package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/internal/progress"
	"github.com/coordinated/coordinated/migrate"
)

// errDifferences is the failure of `migrate -verify` that found differing
// counts (already printed).
var errDifferences = errors.New("the source and the target differ (see above)")

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// runMigrate is `coordinated migrate`: copy work specs and units from a
// running daemon into another through the legacy RPCs (package migrate,
// docs/migration.md). It prints one line per spec on stdout and, on a
// terminal, a progress bar on stderr.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("coordinated migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "`HOST:PORT` of the daemon to copy from (required)")
	to := fs.String("to", "127.0.0.1:5932", "`HOST:PORT` of the daemon to copy into")
	var specs stringList
	fs.Var(&specs, "spec", "copy only this work spec `NAME` (repeatable; default: every spec on the source)")
	pause := fs.Bool("pause-source", false, "pause each spec on the source before copying it")
	verify := fs.Bool("verify", false, "after copying, compare unit counts per spec and status; exit 1 on any difference")
	pageSize := fs.Int("page-size", migrate.DefaultPageSize, "work units per get_work_units `page`")
	retries := fs.Int("retries", client.DefaultRetries, "reconnect attempts per call, as the Python client's coordinate.retries")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: coordinated migrate -from HOST:PORT [-to HOST:PORT] [-spec NAME]... [-pause-source] [-verify]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if *from == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "coordinated migrate: -from HOST:PORT is required and nothing else may follow the flags")
		fs.Usage()
		return errUsage
	}
	dial := func(addr string) (*client.Client, error) {
		cfg := client.DefaultConfig(addr)
		cfg.Retries = *retries
		return client.New(cfg)
	}
	src, err := dial(*from)
	if err != nil {
		return fmt.Errorf("-from: %w", err)
	}
	defer src.Close()
	dst, err := dial(*to)
	if err != nil {
		return fmt.Errorf("-to: %w", err)
	}
	defer dst.Close()

	bar := progress.New(stderr, "units", isTerminal(stderr))
	var last migrate.Progress
	opts := migrate.Options{
		Specs:       specs,
		PauseSource: *pause,
		PageSize:    *pageSize,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Progress: func(p migrate.Progress) {
			if last.Spec != "" && p.Spec != last.Spec {
				bar.Finish(specLabel(last), last.Done, last.Total)
			}
			last = p
			bar.Update(specLabel(p), p.Done, p.Total)
		},
	}
	results, err := migrate.Copy(ctx, src, dst, opts)
	if last.Spec != "" {
		bar.Finish(specLabel(last), last.Done, last.Total)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "work spec\tdefinition\tcopied\tunchanged\tkept on target\t\n")
	for _, r := range results {
		def := "same"
		if r.SpecWritten {
			def = "written"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t\n", r.Name, def, r.Copied, r.Unchanged, r.Kept)
	}
	tw.Flush()
	if err != nil {
		return fmt.Errorf("migrate from %s to %s: %w", *from, *to, err)
	}
	if !*verify {
		return nil
	}
	diffs, err := migrate.Verify(ctx, src, dst, specs)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if len(diffs) == 0 {
		fmt.Fprintln(stdout, "verify: every spec has the same unit counts on both sides")
		return nil
	}
	for _, d := range diffs {
		fmt.Fprintln(stdout, "verify:", d)
	}
	return errDifferences
}

func specLabel(p migrate.Progress) string {
	return fmt.Sprintf("%s (%d/%d)", p.Spec, p.SpecIndex+1, p.SpecCount)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && progress.IsTerminal(f)
}
