package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
	"github.com/coordinated/coordinated/memory"
	"github.com/coordinated/coordinated/postgres"
)

// openBackend opens the storage named by -backend.
func openBackend(ctx context.Context, opts *options, clock coordinate.Clock, log *slog.Logger) (coordinate.Backend, error) {
	if isPostgresURL(opts.backend) {
		if opts.dataDirSet && opts.dataDir != "" {
			log.Warn("-data-dir is ignored with the postgres backend")
		}
		b, err := postgres.New(ctx, opts.backend, postgres.Options{Clock: clock, EnforceMinGB: opts.enforceMinGB,
			StallTimeout: opts.stallTimeout, RequestTimeout: opts.pgTimeout, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("-backend %s: %w", backendLabel(opts.backend), err)
		}
		return b, nil
	}
	mopts := memory.Options{Clock: clock, EnforceMinGB: opts.enforceMinGB, StallTimeout: opts.stallTimeout}
	if opts.volatile {
		log.Warn("memory backend without a data directory: everything is lost when the daemon stops")
		return memory.New(mopts), nil
	}
	mopts.DataDir = opts.dataDir
	mopts.Sync = opts.sync
	mopts.SyncInterval = opts.syncInterval
	mopts.Recover = opts.recover
	mopts.SnapshotBytes = opts.snapshotBytes
	mopts.Logger = log
	b, err := memory.Open(ctx, mopts)
	if errors.Is(err, journal.ErrCorrupt) {
		return nil, fmt.Errorf("-data-dir %s: %w; to start anyway with what can be read, run with -recover (damaged files are renamed aside, nothing is deleted)", opts.dataDir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("-data-dir %s: %w", opts.dataDir, err)
	}
	return b, nil
}

// backendLabel names the backend for logs without the URL's password.
func backendLabel(backend string) string {
	if !isPostgresURL(backend) {
		return backend
	}
	u, err := url.Parse(backend)
	if err != nil {
		return "postgres"
	}
	return u.Redacted()
}
