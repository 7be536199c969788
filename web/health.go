package web

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// handleHealthz answers 200 while the process serves HTTP at all.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// handleReadyz answers 200 when the backend can serve requests (its
// coordinate.ReadyChecker: the journal has not failed; PostgreSQL
// answers) and 503 otherwise. The endpoint needs no token, and a
// backend's error can name the database's user, host and port (pgconn's
// do), so the answer gives only a generic reason; the error goes to the
// daemon's log.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if reason, err := s.ready(r.Context()); err != nil {
		s.log.Warn("readyz: not ready", "reason", reason, "error", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: " + reason + " (details in the daemon's log)\n"))
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}

// readyTimeout bounds a readiness check.
const readyTimeout = 5 * time.Second

// ready asks the backend (coordinate.ReadyChecker, when it is one), then
// checks that the namespace answers a read. On failure it returns the
// error and a reason fit to show anyone: what failed, never the error's
// text.
func (s *Server) ready(ctx context.Context) (reason string, err error) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if rc, ok := s.opts.Backend.(coordinate.ReadyChecker); ok {
		if err := rc.Ready(ctx); err != nil {
			return notReadyReason(err, "the backend is not ready"), err
		}
	}
	if _, _, err := s.ns.ListWorkSpecs(ctx, "", 1); err != nil {
		return notReadyReason(err, "the backend did not answer a read"), err
	}
	return "", nil
}

// notReadyReason names the kind of failure err is, or says otherwise.
func notReadyReason(err error, otherwise string) string {
	switch {
	case errors.Is(err, coordinate.ErrUnavailable):
		return "storage unavailable"
	case errors.Is(err, context.DeadlineExceeded):
		return "the backend did not answer within " + readyTimeout.String()
	}
	return otherwise
}
