package clienttest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/internal/testdaemon"
)

// recorder is a CBOR-RPC server that records each request, decoded, and
// answers with a canned result per method.
type recorder struct {
	mu   sync.Mutex
	reqs []string
}

var cannedResults = map[string]any{
	"get_work_units":   cborrpc.Tuple{[]any{}, nil},
	"get_work":         cborrpc.Tuple{cborrpc.Tuple{nil, nil, nil}, nil},
	"del_work_units":   cborrpc.Tuple{0, nil},
	"count_work_units": cborrpc.Tuple{map[any]any{}, nil},
	"list_work_specs":  cborrpc.Tuple{[]any{}, nil},
}

func (r *recorder) Handle(_ context.Context, req *cborrpc.Request) (any, error) {
	var id any
	cborrpc.DecMode().Unmarshal(req.ID, &id)
	params := make([]any, len(req.Params))
	for i, p := range req.Params {
		if err := cborrpc.DecMode().Unmarshal(p, &params[i]); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, fmt.Sprintf("id=%s %s%s", typed(id), req.Method, typed(params)))
	r.mu.Unlock()
	if res, ok := cannedResults[req.Method]; ok {
		return res, nil
	}
	return cborrpc.Tuple{true, nil}, nil
}

func (r *recorder) start(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := cborrpc.NewServer(r, cborrpc.ServerOptions{})
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return ln.Addr().String()
}

// pythonCalls makes the same calls as goCalls with the Python TaskMaster.
const pythonCalls = `
import sys
from coordinate.job_client import TaskMaster
tm = TaskMaster({'address': sys.argv[1]})
tm.set_work_spec({'name': 'ws', 'min_gb': 1})
tm.add_work_units('ws', [('a', {'x': 1}), (u'b', {u't': u'text', 'l': [1.5, None, True]})])
tm.get_work_units('ws', state=(1, 3), limit=10)
tm.prioritize_work_units('ws', ['a'])
tm.update_work_unit('ws', 'a', lease_time=0, status=1)
tm.get_work('w1', lease_time=60)
tm.del_work_units('ws', state=4)
tm.pause_work_spec('ws')
tm.count_work_units('ws')
tm.worker_heartbeat('w1', 'RUN', 600, {'pid': 7}, 'p')
tm.list_work_specs()
`

func goCalls(ctx context.Context, c *client.Client) error {
	steps := []func() error{
		func() error { return c.SetWorkSpec(ctx, spec("ws")) },
		func() error {
			return c.AddWorkUnits(ctx, "ws", []client.NewUnit{
				{Key: []byte("a"), Data: map[any]any{bs("x"): 1}},
				{Key: "b", Data: map[any]any{"t": "text", bs("l"): []any{1.5, nil, true}}},
			})
		},
		func() error {
			_, err := c.GetWorkUnits(ctx, "ws", client.UnitsQuery{States: []int{1, 3}, Limit: 10})
			return err
		},
		func() error { return c.PrioritizeWorkUnits(ctx, "ws", []any{[]byte("a")}, nil, nil) },
		func() error { return c.Retry(ctx, "ws", []byte("a")) },
		func() error { _, err := c.GetWork(ctx, "w1", client.WorkRequest{LeaseTime: time.Minute}); return err },
		func() error { _, err := c.DelWorkUnits(ctx, "ws", client.DelQuery{State: 4}); return err },
		func() error { return c.PauseWorkSpec(ctx, "ws", true) },
		func() error { _, err := c.CountWorkUnits(ctx, "ws"); return err },
		func() error {
			p := "p"
			return c.WorkerHeartbeat(ctx, "w1", "RUN", 600, map[any]any{bs("pid"): 7}, &p)
		},
		func() error { _, _, err := c.ListWorkSpecs(ctx, nil, 0); return err },
	}
	for i, s := range steps {
		if err := s(); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	return nil
}

// TestEncodesLikePython: the Go client's requests decode to exactly the
// values (types included: byte vs text strings, tuples, ints) and ids the
// Python 2 client sends for the same calls.
func TestEncodesLikePython(t *testing.T) {
	venv := testdaemon.PyVenv(t)
	var py, gor recorder
	out, err := exec.Command(filepath.Join(venv, "bin", "python"), "-c", pythonCalls, py.start(t)).CombinedOutput()
	if err != nil {
		t.Fatalf("python client: %v\n%s", err, out)
	}
	c := testdaemon.Dial(t, gor.start(t))
	if err := goCalls(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(py.reqs, gor.reqs) {
		for i := range max(len(py.reqs), len(gor.reqs)) {
			var p, g string
			if i < len(py.reqs) {
				p = py.reqs[i]
			}
			if i < len(gor.reqs) {
				g = gor.reqs[i]
			}
			if p != g {
				t.Errorf("request %d:\n python %s\n go     %s", i, p, g)
			}
		}
	}
}

// typed renders a decoded CBOR value with its wire types visible: b"…"
// for byte strings (values and map keys), u"…" for text, T(…) for tag-128
// tuples, [...] for arrays, map entries sorted.
func typed(v any) string {
	switch x := v.(type) {
	case []byte:
		return fmt.Sprintf("b%q", x)
	case cbor.ByteString:
		return fmt.Sprintf("b%q", string(x))
	case string:
		return fmt.Sprintf("u%q", x)
	case cborrpc.Tuple:
		return "T(" + typedList(x) + ")"
	case []any:
		return "[" + typedList(x) + "]"
	case map[any]any:
		var kv []string
		for k, e := range x {
			kv = append(kv, typed(k)+": "+typed(e))
		}
		sort.Strings(kv)
		return "{" + strings.Join(kv, ", ") + "}"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

func typedList(l []any) string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = typed(e)
	}
	return strings.Join(s, ", ")
}
