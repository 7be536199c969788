package web

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/internal/replyhold"
)

// rpcMetrics are the CBOR-RPC request counts and latencies by method.
type rpcMetrics struct {
	requests *prometheus.HistogramVec
	failures *prometheus.CounterVec
	byMethod sync.Map // method label -> *methodMetrics, so requests skip the vectors' label hashing
}

type methodMetrics struct {
	latency  prometheus.Observer
	failures prometheus.Counter
}

func (m *rpcMetrics) of(method string) *methodMetrics {
	if mm, ok := m.byMethod.Load(method); ok {
		return mm.(*methodMetrics)
	}
	mm := &methodMetrics{latency: m.requests.WithLabelValues(method), failures: m.failures.WithLabelValues(method)}
	actual, _ := m.byMethod.LoadOrStore(method, mm)
	return actual.(*methodMetrics)
}

func newRPCMetrics() *rpcMetrics {
	return &rpcMetrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "coordinated_rpc_duration_seconds",
			Help:    "CBOR-RPC requests by method: count and time to answer.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 100 µs to 26 s
		}, []string{"method"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coordinated_rpc_errors_total",
			Help: "CBOR-RPC requests answered with an RPC-level error (bad parameters, unknown method, backend failure).",
		}, []string{"method"}),
	}
}

// unknownMethod labels requests for methods the server does not offer, so
// that clients cannot grow the label set.
const unknownMethod = "_unknown"

// RPCHandler wraps h so that its requests are counted and timed by
// method. known reports whether a method name is one h offers.
func (s *Server) RPCHandler(h cborrpc.Handler, known func(string) bool) cborrpc.Handler {
	return rpcHandler{h: h, known: known, m: s.rpc}
}

type rpcHandler struct {
	h     cborrpc.Handler
	known func(string) bool
	m     *rpcMetrics
}

func (r rpcHandler) Handle(ctx context.Context, req *cborrpc.Request) (any, error) {
	start := time.Now()
	res, err := r.h.Handle(ctx, req)
	method := req.Method
	if !r.known(method) {
		method = unknownMethod
	}
	mm := r.m.of(method)
	// A held reply (internal/replyhold) is answered when its change is
	// durable: that is when the request ends.
	replyhold.WhenAnswered(ctx, err, func(err error) { mm.observe(start, err) })
	return res, err
}

// observe counts one request that started at start and was answered
// with err (nil: a result).
func (mm *methodMetrics) observe(start time.Time, err error) {
	mm.latency.Observe(time.Since(start).Seconds())
	if err != nil {
		mm.failures.Inc()
	}
}
