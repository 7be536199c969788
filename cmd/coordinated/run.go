package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/jobserver"
)

// shutdownGrace bounds how long a shutdown waits for in-flight requests.
const shutdownGrace = 30 * time.Second

// run is the whole daemon: it serves until ctx is cancelled (the signal
// handler in main), then shuts down cleanly. If ready is non-nil it gets
// the listening address once the port is open. A first argument naming a
// subcommand (subcommands.go) runs that instead.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- net.Addr) error {
	if sc, ok := subcommandOf(args); ok {
		return sc.run(ctx, args[1:], stdout, stderr)
	}
	opts, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	if opts.version {
		fmt.Fprintln(stdout, "coordinated", version)
		return nil
	}
	if opts.py.dumpConfig != "" {
		return opts.dumpConfig(stdout)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: opts.logLevel}))
	if opts.gcPercentSet || os.Getenv("GOGC") == "" {
		debug.SetGCPercent(opts.gcPercent)
	}

	cfg := jobserver.Config{Clock: coordinate.SystemClock{}, Logger: log, Limits: opts.limits.jobserverLimits()}
	if c := opts.py.config; c != nil {
		if cfg.ServerConfig, cfg.Retention, err = jobserver.LoadYAMLConfig(c.text); err != nil {
			return fmt.Errorf("-config %s: %w", opts.configFile, err)
		}
		for _, note := range c.notes() {
			log.Warn(note, "config", opts.configFile)
		}
	}
	if opts.py.pidFile != "" {
		remove, err := writePIDFile(opts.py.pidFile)
		if err != nil {
			return fmt.Errorf("--pid: %w", err)
		}
		defer remove()
	}

	// The port first: a port still held (the Python daemon not stopped
	// yet) must fail the start before the backend is opened, so that the
	// Python daemon's snapshots are not taken over from a daemon that is
	// still changing its queue.
	ln, err := net.Listen("tcp", opts.listen)
	if err != nil {
		return fmt.Errorf("-listen: %w", err)
	}
	defer ln.Close()
	backend, err := openBackendTakingOver(ctx, opts, cfg.Clock, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := backend.Close(); err != nil {
			log.Error("closing backend", "err", err)
		}
	}()
	ns, err := backend.Namespace(ctx, "")
	if err != nil {
		return fmt.Errorf("opening the default namespace: %w", err)
	}

	js := jobserver.New(ns, cfg)
	var handler cborrpc.Handler = loggingHandler{h: js, log: log}
	lln := &loggingListener{Listener: ln, log: log}
	hs, err := startHTTPD(ctx, opts, backend, ns, lln.open.Load, log)
	if err != nil {
		return err
	}
	defer hs.shutdown(log)
	if hs != nil {
		handler = hs.web.RPCHandler(handler, js.HasMethod)
	}
	srvOpts := opts.limits.serverLimits(opts.maxRequestSize, log)
	srvOpts.Logger = log
	srv := cborrpc.NewServer(handler, srvOpts)
	log.Info("listening", "addr", ln.Addr().String(), "backend", backendLabel(opts.backend), "data_dir", opts.dataDir, "version", version)
	if opts.py.debug != nil {
		log.Debug("--debug: there are no per-module loggers; all debug logging is on", "loggers", []string(opts.py.debug))
	}
	if ready != nil {
		ready <- ln.Addr()
	}

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go watchStalledGroups(watchCtx, ns, opts.stallTimeout, log)
	go js.FollowSharedWork(watchCtx) // other daemons' work wakes long polls
	procsDone := startAdaptiveProcs(watchCtx, opts, backend, os.Getenv, log)
	defer func() { stopWatch(); <-procsDone }() // the default is back before run returns

	served := make(chan error, 1)
	go func() { served <- srv.Serve(lln) }()
	var failure error
	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	case <-journalFailed(backend):
		log.Error("the memory backend's journal failed: stopping so that a restart recovers what is on disk")
		failure = errors.New("the memory backend's journal failed (see the log); restart to recover")
	}

	log.Info("shutting down")
	js.StopWaiting() // long-polling get_work calls answer now
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("shutdown incomplete", "err", err)
	}
	if err := <-served; err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, cborrpc.ErrServerClosed) {
		log.Warn("server stopped", "err", err)
	}
	log.Info("stopped")
	return failure
}

// journalFailed is closed when a persistent memory backend's journal
// fails; nil (never ready) for other backends.
func journalFailed(b coordinate.Backend) <-chan struct{} {
	if f, ok := b.(coordinate.FailureNotifier); ok {
		return f.Failed()
	}
	return nil
}
