package cborrpc

import (
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/coordinated/coordinated/internal/textcut"
)

// MaxLogValue is the most bytes of one client-supplied value (a method
// name, a key, a panic message quoting a parameter) that a log line
// carries: a client must not be able to write megabytes of log per
// request.
const MaxLogValue = 200

// LogValue returns s cut to MaxLogValue bytes (on a rune boundary), with
// the original length noted when it was cut. Use it for every value a
// client chose that goes into a log line.
func LogValue(s string) string {
	if len(s) <= MaxLogValue {
		return s
	}
	return textcut.Prefix(s, MaxLogValue) + "...(" + strconv.Itoa(len(s)) + " bytes)"
}

// refusalLog counts connections refused over the cap and logs them at
// most once per interval, so a flood of connections cannot flood the log.
type refusalLog struct {
	interval time.Duration

	mu      sync.Mutex
	count   int
	last    time.Time
	pending bool // a count is waiting for the next interval
}

// refused records one refused connection and logs when the interval
// since the last line has passed; otherwise it schedules one line for
// when it has, so the count is never lost.
func (r *refusalLog) refused(log *slog.Logger, maxConns int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	if since := time.Since(r.last); since >= r.interval {
		r.flushLocked(log, maxConns)
		return
	} else if !r.pending {
		r.pending = true
		time.AfterFunc(r.interval-since, func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.pending = false
			if r.count > 0 {
				r.flushLocked(log, maxConns)
			}
		})
	}
}

func (r *refusalLog) flushLocked(log *slog.Logger, maxConns int) {
	log.Warn("cborrpc: refused connections: connection limit reached",
		"refused", r.count, "max_connections", maxConns, "interval", r.interval)
	r.count = 0
	r.last = time.Now()
}
