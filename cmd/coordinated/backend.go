package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"

	"coordinated/coordinate"
	"coordinated/memory"
	"coordinated/postgres"
)

// openBackend opens the storage named by -backend.
func openBackend(ctx context.Context, opts *options, clock coordinate.Clock, log *slog.Logger) (coordinate.Backend, error) {
	if isPostgresURL(opts.backend) {
		if opts.dataDir != "" {
			log.Warn("-data-dir is ignored with the postgres backend")
		}
		b, err := postgres.New(ctx, opts.backend, postgres.Options{Clock: clock, EnforceMinGB: opts.enforceMinGB})
		if err != nil {
			return nil, fmt.Errorf("-backend %s: %w", backendLabel(opts.backend), err)
		}
		return b, nil
	}
	if opts.dataDir != "" {
		log.Warn("-data-dir is accepted but not used yet: the memory backend keeps no journal, state is lost on exit", "dir", opts.dataDir)
	}
	return memory.New(memory.Options{Clock: clock, EnforceMinGB: opts.enforceMinGB}), nil
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
