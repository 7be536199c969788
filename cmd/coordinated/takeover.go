package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
	"github.com/coordinated/coordinated/pyimport"
)

// openBackendTakingOver opens the backend and, when the Python daemon's
// snapshots are to be taken over (--snapshot-dir, or snapshot_path_format
// with do_recover), imports the newest complete one and the action logs
// after it into a new backend: a memory data directory that does not
// exist yet or is empty (built aside and renamed into place, so a crash
// part-way leaves nothing), or a volatile or PostgreSQL backend without
// work specs. docs/migration.md, "Taking over a Python daemon's snapshot
// directory".
func openBackendTakingOver(ctx context.Context, opts *options, clock coordinate.Clock, log *slog.Logger) (coordinate.Backend, error) {
	format := opts.py.snapshotFormat
	if format == "" {
		return openBackend(ctx, opts, clock, log)
	}
	persistentMemory := !isPostgresURL(opts.backend) && !opts.volatile
	if persistentMemory {
		fresh, err := dirIsNew(opts.dataDir)
		if err != nil {
			return nil, fmt.Errorf("-data-dir %s: %w", opts.dataDir, err)
		}
		if !fresh {
			log.Info("the data directory already holds our own state; the Python daemon's snapshots are not imported again", "data_dir", opts.dataDir, "snapshots", format)
			return openBackend(ctx, opts, clock, log)
		}
	}
	src, ok, err := locatePython(format, opts.py.logFormat, log)
	if err != nil {
		return nil, err
	}
	if !ok || !persistentMemory {
		b, err := openBackend(ctx, opts, clock, log)
		if err != nil || !ok {
			return b, err
		}
		if err := importIfEmpty(ctx, b, src, log); err != nil {
			b.Close()
			return nil, err
		}
		return b, nil
	}

	staging := filepath.Clean(opts.dataDir) + ".importing" // beside it, even for "dir/"
	if err := os.RemoveAll(staging); err != nil {
		return nil, fmt.Errorf("removing an unfinished import: %w", err)
	}
	sopts := *opts
	sopts.dataDir = staging
	b, err := openBackend(ctx, &sopts, clock, log)
	if err != nil {
		return nil, err
	}
	ns, err := b.Namespace(ctx, "")
	if err == nil {
		_, err = importPython(ctx, ns, src, false, log)
	}
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		os.Remove(opts.dataDir) // empty, or absent
		err = os.Rename(staging, opts.dataDir)
	}
	if err != nil {
		os.RemoveAll(staging)
		return nil, fmt.Errorf("importing the Python daemon's state: %w", err)
	}
	// The rename is durable only once the directory holding it is synced:
	// lost to a power cut after the daemon ran, the next start would find
	// no data directory and import the snapshots again over that work.
	// The imported state in place is whole, so it stays if this fails.
	sync := opts.syncDir
	if sync == nil {
		sync = journal.SyncDir
	}
	if err := sync(filepath.Dir(filepath.Clean(opts.dataDir))); err != nil {
		return nil, fmt.Errorf("importing the Python daemon's state: making its rename into %s durable: %w", opts.dataDir, err)
	}
	return openBackend(ctx, opts, clock, log)
}

// locatePython finds the files to import and logs what it found; ok is
// false when there is nothing to import.
func locatePython(format, logFormat string, log *slog.Logger) (pyimport.Source, bool, error) {
	found, err := pyimport.Locate(format, logFormat)
	if err != nil {
		return pyimport.Source{}, false, err
	}
	for _, s := range found.Skipped {
		log.Warn("skipping a Python snapshot", "file", s.Path, "reason", s.Reason)
	}
	switch {
	case found.Snapshot == "" && found.Candidates > 0:
		log.Warn("no complete Python snapshot; starting with an empty queue", "snapshots", format, "found", found.Candidates)
		return pyimport.Source{}, false, nil
	case found.Snapshot == "" && len(found.Logs) == 0:
		log.Info("no Python snapshot to import; starting with an empty queue", "snapshots", format)
		return pyimport.Source{}, false, nil
	case found.Snapshot == "":
		log.Warn("no Python snapshot, only action logs: replaying them from an empty queue", "logs", len(found.Logs))
	}
	return pyimport.Source{Snapshot: found.Snapshot, Logs: found.Logs}, true, nil
}

// importIfEmpty imports src into the default namespace of b unless it
// already holds work specs.
func importIfEmpty(ctx context.Context, b coordinate.Backend, src pyimport.Source, log *slog.Logger) error {
	ns, err := b.Namespace(ctx, "")
	if err != nil {
		return err
	}
	specs, _, err := ns.ListWorkSpecs(ctx, "", 1)
	if err != nil {
		return err
	}
	if len(specs) > 0 {
		log.Info("the backend already holds work specs; the Python daemon's snapshots are not imported (coordinated import-python -replace does that)")
		return nil
	}
	_, err = importPython(ctx, ns, src, false, log)
	return err
}

// importPython reads src and loads it into ns, logging what it did.
func importPython(ctx context.Context, ns coordinate.Namespace, src pyimport.Source, replace bool, log *slog.Logger) (*pyimport.Summary, error) {
	st, rep, err := pyimport.Read(src, time.Now())
	if err != nil {
		return nil, err
	}
	for _, torn := range rep.Torn {
		log.Warn("an action log ends inside a record, as a stopped Python daemon leaves the log it had open; that last change was never completely written and is not applied",
			"file", torn.File, "offset", torn.Offset)
	}
	sum, err := pyimport.Load(ctx, ns, st, replace)
	if err != nil {
		return nil, err
	}
	total := sum.Total()
	files := append([]string{src.Snapshot}, src.Logs...)
	if src.Snapshot == "" {
		files = files[1:]
	}
	log.Info("imported the Python daemon's state", "specs", len(sum.Specs),
		"available", total[coordinate.StatusAvailable], "pending", total[coordinate.StatusPending],
		"finished", total[coordinate.StatusFinished], "failed", total[coordinate.StatusFailed],
		"log_records", rep.Records, "files", files)
	return sum, nil
}

// dirIsNew reports whether dir does not exist or is empty.
func dirIsNew(dir string) (bool, error) {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return false, err
}
