package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/web"
)

// httpdAddr is the listen address of --httpd: like the Python daemon's
// "[ip]:port", but an empty ip means 127.0.0.1 (the RPC port's default),
// not every interface.
func httpdAddr(spec string) (string, error) {
	host, port, err := net.SplitHostPort(spec)
	if err != nil {
		if _, perr := fmt.Sscanf(spec, "%d", new(int)); perr == nil && !strings.Contains(spec, ":") {
			host, port, err = "", spec, nil
		} else {
			return "", fmt.Errorf("--httpd %q: want [ip]:port", spec)
		}
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// httpd serves the web package on the --httpd listener until ctx ends.
type httpd struct {
	srv  *http.Server
	web  *web.Server
	ln   net.Listener
	done chan error
}

// startHTTPD opens the listener; nil when --httpd was not given.
func startHTTPD(ctx context.Context, opts *options, backend coordinate.Backend, ns coordinate.Namespace, conns func() int64, log *slog.Logger) (*httpd, error) {
	if opts.httpd == "" {
		return nil, nil
	}
	addr, err := httpdAddr(opts.httpd)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--httpd: %w", err)
	}
	ws := web.New(web.Options{Namespace: ns, Backend: backend, Actions: opts.httpdActions, Token: opts.httpdToken,
		Pprof: opts.httpdPprof, ConnectionsOpen: conns, Logger: log})
	h := &httpd{
		srv:  &http.Server{Handler: ws, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		web:  ws,
		ln:   ln,
		done: make(chan error, 1),
	}
	go ws.Run(ctx)
	go func() { h.done <- h.srv.Serve(ln) }()
	log.Info("http listening", "addr", ln.Addr().String(), "actions", opts.httpdActions, "pprof", opts.httpdPprof, "token", opts.httpdToken != "")
	if opts.httpdActions && opts.httpdToken == "" && !isLoopback(ln.Addr()) {
		log.Warn("dashboard actions are enabled without -httpd-token on a non-loopback address")
	}
	return h, nil
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// httpdGrace bounds how long shutdown waits for HTTP requests in flight.
const httpdGrace = 5 * time.Second

// shutdown stops the listener, letting requests in flight finish.
func (h *httpd) shutdown(log *slog.Logger) {
	if h == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), httpdGrace)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		log.Warn("http shutdown incomplete", "err", err)
	}
	if err := <-h.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("http server stopped", "err", err)
	}
}
