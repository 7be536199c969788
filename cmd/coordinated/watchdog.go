package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
)

// watchStalledGroups logs a warning for every stalled group of ns (a group
// with AVAILABLE units and no status change for the stall timeout;
// docs/dependencies.md) until ctx is done. It checks every quarter of the
// timeout (at most once a minute) and repeats a warning for a group only
// once per timeout while the group stays stalled.
func watchStalledGroups(ctx context.Context, ns coordinate.Namespace, timeout time.Duration, log *slog.Logger) {
	every := min(timeout/4, time.Minute)
	if every <= 0 {
		every = time.Second
	}
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	warned := map[string]time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		stalled, err := ns.StalledGroups(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("stall watchdog: listing stalled groups failed", "err", err)
			}
			continue
		}
		warned = warnStalled(stalled, warned, time.Now(), timeout, log)
	}
}

// warnStalled logs the stalled groups not warned about within the last
// timeout and returns the warnings to remember (groups no longer stalled
// are forgotten, so a group that stalls again is reported again).
func warnStalled(stalled []*coordinate.GroupStatus, warned map[string]time.Time, now time.Time, timeout time.Duration, log *slog.Logger) map[string]time.Time {
	next := make(map[string]time.Time, len(stalled))
	for _, gs := range stalled {
		last, seen := warned[gs.Group]
		if seen && now.Sub(last) < timeout {
			next[gs.Group] = last
			continue
		}
		log.Warn("work-unit group stalled: runnable units but no progress",
			"group", cborrpc.LogValue(gs.Group),
			"available", gs.Counts[coordinate.StatusAvailable],
			"blocked", gs.Counts[coordinate.StatusBlocked],
			"pending", gs.Counts[coordinate.StatusPending],
			"last_progress", gs.LastProgress.UTC().Format(time.RFC3339),
			"stall_timeout", timeout)
		next[gs.Group] = now
	}
	return next
}
