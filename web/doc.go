// Package web is the daemon's HTTP side (the --httpd listener): the
// Python daemon's summary page at /, Prometheus metrics at /metrics,
// /healthz and /readyz probes, and an operations dashboard under /ui/
// with opt-in actions. It reads the queue through coordinate.Namespace and
// the optional coordinate.StatsReader and coordinate.GroupLister, so no
// page or scrape scans all work units; backend figures (journal, pool,
// committer) come through the small interfaces in backend.go.
//
// Pages are rendered on the server with html/template and work without
// JavaScript; app.js only refreshes them. Templates and assets are
// embedded in the binary.
package web
