package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
)

// Options configure a Server.
type Options struct {
	// Namespace is the queue shown (the legacy protocol's namespace "").
	Namespace coordinate.Namespace
	// Backend holding it: its journal, pool and committer figures and its
	// readiness are read through the interfaces in backend.go.
	Backend coordinate.Backend
	// Actions enables the dashboard's POST actions (-httpd-actions).
	Actions bool
	// Token, when set, is required for actions, as a bearer token or as
	// the password of HTTP basic auth (-httpd-token).
	Token string
	// Pprof serves net/http/pprof under /debug/pprof/ (-httpd-pprof).
	Pprof bool
	// MaxSpecLabels bounds the spec label of metrics: specs after the
	// first MaxSpecLabels by name are summed under "_other". 0 means
	// DefaultMaxSpecLabels.
	MaxSpecLabels int
	// ScrapeTimeout bounds the backend reads of one /metrics scrape and of
	// one throughput sample of the dashboard; what is not read by then is
	// left out and the scrape says so (coordinated_scrape_errors 1). 0
	// means DefaultScrapeTimeout.
	ScrapeTimeout time.Duration
	// ConnectionsOpen reports the open CBOR-RPC connections; nil omits
	// the metric.
	ConnectionsOpen func() int64
	Clock           coordinate.Clock // nil = coordinate.SystemClock{}
	Logger          *slog.Logger     // nil = slog.Default()
}

// DefaultMaxSpecLabels is the default bound on the metrics' spec label.
const DefaultMaxSpecLabels = 200

// Server is the HTTP handler of the --httpd listener.
type Server struct {
	opts    Options
	ns      coordinate.Namespace
	log     *slog.Logger
	clock   coordinate.Clock
	mux     *http.ServeMux
	reg     *prometheus.Registry
	rpc     *rpcMetrics
	csrf    string // per-process secret the actions' CSRF tokens derive from
	history *history
	pages   *templates
	// retryPage is how many failed units one step of "retry" handles.
	retryPage int
	other     otherEvents // "_other"'s monotonic event counters (metrics.go)
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// New returns a Server. Call Run to sample throughput for the sparklines.
func New(opts Options) *Server {
	if opts.Clock == nil {
		opts.Clock = coordinate.SystemClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxSpecLabels <= 0 {
		opts.MaxSpecLabels = DefaultMaxSpecLabels
	}
	if opts.ScrapeTimeout <= 0 {
		opts.ScrapeTimeout = DefaultScrapeTimeout
	}
	secret := make([]byte, 16)
	_, _ = rand.Read(secret) // crypto/rand never fails on supported platforms
	s := &Server{
		opts:    opts,
		ns:      opts.Namespace,
		log:     opts.Logger,
		clock:   opts.Clock,
		mux:     http.NewServeMux(),
		reg:     prometheus.NewRegistry(),
		rpc:     newRPCMetrics(),
		csrf:    hex.EncodeToString(secret),
		history: newHistory(historyLen),
		pages:   parseTemplates(),
	}
	s.retryPage = retryPage
	s.reg.MustRegister(&collector{s: s}, s.rpc.requests, s.rpc.failures,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /{$}", s.handleSummary)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{s.log}}))
	s.mux.HandleFunc("GET /healthz", s.handleHealthz)
	s.mux.HandleFunc("GET /readyz", s.handleReadyz)
	s.mux.HandleFunc("GET /ui/{$}", s.handleSpecs)
	s.mux.HandleFunc("GET /ui/spec", s.handleSpec)
	s.mux.HandleFunc("GET /ui/unit", s.handleUnit)
	s.mux.HandleFunc("GET /ui/workers", s.handleWorkers)
	s.mux.HandleFunc("GET /ui/groups", s.handleGroups)
	s.mux.HandleFunc("GET /ui/group", s.handleGroup)
	s.mux.HandleFunc("POST /ui/action", s.handleAction)
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	if s.opts.Pprof {
		s.mux.HandleFunc("/debug/pprof/", pprof.Index)
		s.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
}

// ServeHTTP serves a request, logging it at debug level.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	s.mux.ServeHTTP(rec, r)
	s.log.Debug("http request", "method", cborrpc.LogValue(r.Method), "path", cborrpc.LogValue(r.URL.Path), "query", cborrpc.LogValue(r.URL.RawQuery),
		"status", rec.status, "remote", r.RemoteAddr, "took", time.Since(start))
}

// Run samples throughput for the dashboard's sparklines until ctx ends.
func (s *Server) Run(ctx context.Context) {
	t := time.NewTicker(historyStep)
	defer t.Stop()
	for {
		s.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// authorized checks the actions' token, if one is configured.
func (s *Server) authorized(r *http.Request) bool {
	if s.opts.Token == "" {
		return true
	}
	given := ""
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		given = strings.TrimPrefix(h, "Bearer ")
	} else if _, pw, ok := r.BasicAuth(); ok {
		given = pw
	}
	return subtle.ConstantTimeCompare([]byte(given), []byte(s.opts.Token)) == 1
}

// directHost reports whether an HTTP Host header names this machine
// directly: an IP address or localhost (with or without a port), not a
// DNS name another site could have pointed here.
func directHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// slogPrinter adapts a logger to promhttp's error log.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Warn("metrics", "error", v) }
