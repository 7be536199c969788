package jobserver

import (
	"context"
	"log/slog"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/cborx"
)

// Config configures a JobServer.
type Config struct {
	// ServerConfig is the value get_config returns: one encoded CBOR item,
	// normally a map (see EncodeYAMLConfig). Nil means {}.
	ServerConfig coordinate.Data
	// Retention is the policy the archive method applies. Nil keeps every
	// completed unit (archive then changes nothing), as the Python daemon
	// did with its default configuration.
	Retention *coordinate.RetentionPolicy
	// Clock tells the time for `now` and age_seconds.
	// Nil means the system clock. It should be the backend's clock.
	Clock coordinate.Clock
	// Logger receives backend failures; nil means slog.Default().
	Logger *slog.Logger
	// Limits are the per-call quotas; zero fields take the defaults.
	Limits Limits
}

// JobServer answers the legacy coordinate CBOR-RPC methods against one
// namespace. It is safe for concurrent use.
type JobServer struct {
	ns        coordinate.Namespace
	config    coordinate.Data
	retention *coordinate.RetentionPolicy
	clock     coordinate.Clock
	log       *slog.Logger
	methods   map[string]method
	limits    Limits
	waits     *waitList // get_work calls waiting for work (longpoll.go)
	// shared is ns when other daemons share it, else nil (longpoll.go).
	shared coordinate.SharedWork
}

// method is one RPC: its parameter signature and implementation, which
// receives the bound parameters in positional order.
type method struct {
	sig signature
	run func(ctx context.Context, p []cbor.RawMessage) (any, error)
}

// New returns a JobServer serving ns.
func New(ns coordinate.Namespace, cfg Config) *JobServer {
	js := &JobServer{
		ns:        ns,
		config:    cfg.ServerConfig,
		retention: cfg.Retention,
		clock:     cfg.Clock,
		log:       cfg.Logger,
		limits:    cfg.Limits.withDefaults(),
	}
	if js.config == nil {
		js.config = coordinate.EmptyMap
	}
	if js.clock == nil {
		js.clock = coordinate.SystemClock{}
	}
	if js.log == nil {
		js.log = slog.Default()
	}
	js.waits = newWaitList()
	js.shared, _ = ns.(coordinate.SharedWork)
	if wn, ok := ns.(coordinate.WorkNotifier); ok {
		wn.NotifyWork(js.workMayBeAvailable)
	}
	js.methods = js.methodTable()
	js.wakeWaitersAfter(js.methods)
	return js
}

// methodTable lists every method the legacy protocol offers (PROTOCOL §8.1
// to §8.25) with its parameter names. Anything else, including the
// file-touching names of §8.26, is an unknown method.
func (js *JobServer) methodTable() map[string]method {
	m := map[string]method{}
	add := func(name string, required int, params []string, run func(context.Context, []cbor.RawMessage) (any, error)) {
		m[name] = method{sig: signature{method: name, names: params, required: required}, run: run}
	}
	// Work specs.
	add("set_work_spec", 1, []string{"work_spec"}, js.setWorkSpec)
	add("get_work_spec", 1, []string{"work_spec_name"}, js.getWorkSpec)
	add("list_work_specs", 1, []string{"options"}, js.listWorkSpecs)
	add("control_work_spec", 2, []string{"work_spec_name", "options"}, js.controlWorkSpec)
	add("get_work_spec_meta", 1, []string{"work_spec_name"}, js.getWorkSpecMeta)
	add("clear", 0, nil, js.clear)
	add("del_work_spec", 1, []string{"work_spec_name"}, js.delWorkSpec)
	add("archive", 0, []string{"options"}, js.archive)
	// Work units.
	add("add_work_units", 2, []string{"work_spec_name", "work_unit_key_vals"}, js.addWorkUnits)
	add("count_work_units", 1, []string{"work_spec_name"}, js.countWorkUnits)
	add("get_work_units", 2, []string{"work_spec_name", "options"}, js.getWorkUnits)
	add("prioritize_work_units", 2, []string{"work_spec_name", "options"}, js.prioritizeWorkUnits)
	add("del_work_units", 2, []string{"work_spec_name", "options"}, js.delWorkUnits)
	add("get_work_unit_status", 2, []string{"work_spec_name", "work_unit_keys"}, js.getWorkUnitStatus)
	add("update_work_unit", 3, []string{"work_spec_name", "work_unit_key", "options"}, js.updateWorkUnit)
	// Leasing.
	add("get_work", 2, []string{"worker_id", "options"}, js.getWork)
	add("get_child_work_units", 1, []string{"worker_id"}, js.getChildWorkUnits)
	// Groups of work units (an extension, docs/dependencies.md).
	add("group_status", 1, []string{"group"}, js.groupStatus)
	add("cancel_group", 1, []string{"group"}, js.cancelGroup)
	// Workers.
	add("worker_heartbeat", 5, []string{"worker_id", "mode", "expire_seconds", "data", "parent"}, js.workerHeartbeat)
	add("worker_unregister", 1, []string{"worker_id"}, js.workerUnregister)
	add("list_worker_modes", 0, nil, js.listWorkerModes)
	add("get_worker_info", 1, []string{"worker_id"}, js.getWorkerInfo)
	add("mode_counts", 0, nil, js.modeCounts)
	add("worker_stats", 0, nil, js.workerStats)
	// Server.
	add("get_config", 0, nil, js.getConfig)
	add("now", 0, nil, js.now)
	// Lock service (§8.25).
	add("lock", 3, []string{"locker_id", "timeout", "keys"}, js.lock)
	add("locksome", 3, []string{"locker_id", "timeout", "keys"}, js.locksome)
	add("renew", 3, []string{"locker_id", "timeout", "keys"}, js.renew)
	add("readlock", 1, []string{"keys"}, js.readlock)
	add("unlock", 2, []string{"locker_id", "keys"}, js.unlock)
	add("delete_namespace", 1, []string{"prefix"}, js.deleteNamespace)
	return m
}

// Handle implements cborrpc.Handler.
func (js *JobServer) Handle(ctx context.Context, req *cborrpc.Request) (any, error) {
	m, ok := js.methods[req.Method]
	if !ok {
		return nil, noSuchMethod(req.Method)
	}
	params, err := m.sig.bind(req)
	if err != nil {
		return nil, err
	}
	if err := js.limits.checkLockKeys(m.sig, params); err != nil {
		return nil, err
	}
	return m.run(ctx, params)
}

// Result helpers. Server-generated strings go out as byte strings, as the
// Python daemon sent them (PROTOCOL §5.3).

// pair is the usual (value, message) result.
func pair(value, msg any) cborrpc.Tuple { return cborrpc.Tuple{value, msg} }

// okPair is (true, null), already encoded.
func okPair() any { return okResult }

// message is an in-band message string as a CBOR byte string.
func message(s string) []byte { return []byte(s) }

// nameValue returns a name as it arrived: text or byte string.
func nameValue(n coordinate.Name) any {
	if n.Text {
		return n.Bytes
	}
	return []byte(n.Bytes)
}

// optionalNameValue is nameValue, or null for nil.
func optionalNameValue(n *coordinate.Name) any {
	if n == nil {
		return nil
	}
	return nameValue(*n)
}

// nameKey returns a name usable as a Go map key that encodes with its kind.
func nameKey(n coordinate.Name) any {
	if n.Text {
		return n.Bytes
	}
	return cbor.ByteString(n.Bytes)
}

// encodeName encodes a name as a CBOR item of its kind.
func encodeName(n coordinate.Name) cbor.RawMessage {
	if !n.Text {
		return encodeBytes(n.Bytes)
	}
	return cborx.AppendText(make([]byte, 0, len(n.Bytes)+9), n.Bytes)
}

// rawData returns stored user data for verbatim output; missing data is
// null.
func rawData(d coordinate.Data) any {
	if len(d) == 0 {
		return nil
	}
	return cbor.RawMessage(d)
}

// seconds converts a time to float Unix seconds, or null for the zero time.
func seconds(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return float64(t.UnixNano()) / 1e9
}
