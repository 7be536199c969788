package web

import (
	"context"
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
// answers) and 503 otherwise.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.ready(r.Context()); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}

// readyTimeout bounds a readiness check.
const readyTimeout = 5 * time.Second

// ready asks the backend (coordinate.ReadyChecker, when it is one), then
// checks that the namespace answers a read.
func (s *Server) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if rc, ok := s.opts.Backend.(coordinate.ReadyChecker); ok {
		if err := rc.Ready(ctx); err != nil {
			return err
		}
	}
	_, _, err := s.ns.ListWorkSpecs(ctx, "", 1)
	return err
}
