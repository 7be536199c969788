package web

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// handleHealthz answers 200 while the process serves HTTP at all.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// handleReadyz answers 200 when the backend can serve requests (the
// journal has not failed; PostgreSQL answers) and 503 otherwise.
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

var errJournalFailed = errors.New("the journal failed: changes are refused until the daemon restarts")

// ready checks the backend, then that the namespace answers a read.
func (s *Server) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	switch b := s.opts.Backend.(type) {
	case journaled:
		select {
		case <-b.Failed(): // nil for a volatile backend: never ready
			return errJournalFailed
		default:
		}
	case pooled:
		if err := b.Ping(ctx); err != nil {
			return err
		}
	}
	_, _, err := s.ns.ListWorkSpecs(ctx, "", 1)
	return err
}
