package clienttest

import (
	"context"
	"errors"
	"net"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/internal/testdaemon"
)

func bs(s string) cbor.ByteString { return cbor.ByteString(s) }

// spec builds a work spec the way a Python 2 caller writes one.
func spec(name string, extra ...any) map[any]any {
	m := map[any]any{bs("name"): []byte(name), bs("min_gb"): 1}
	for i := 0; i < len(extra); i += 2 {
		m[bs(extra[i].(string))] = extra[i+1]
	}
	return m
}

// TestMethods drives every legacy method through the typed API against
// our daemon on both backends and against the real Python daemon.
func TestMethods(t *testing.T) {
	daemons := map[string]func(t *testing.T) string{
		"memory":   func(t *testing.T) string { return testdaemon.Ours(t, "memory") },
		"postgres": func(t *testing.T) string { return testdaemon.Ours(t, "postgres") },
		"python":   func(t *testing.T) string { return testdaemon.Python(t) },
	}
	for name, start := range daemons {
		t.Run(name, func(t *testing.T) { testMethods(t, testdaemon.Dial(t, start(t)), name == "python") })
	}
}

func testMethods(t *testing.T, c *client.Client, python bool) {
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	if specs, err := c.WorkSpecs(ctx); err != nil || len(specs) != 0 {
		t.Fatalf("WorkSpecs on an empty daemon = %v, %v", specs, err)
	}
	must(c.SetWorkSpec(ctx, spec("ws1", "then", []byte("ws2"))))
	must(c.SetWorkSpec(ctx, spec("ws2")))
	got, err := c.GetWorkSpec(ctx, "ws1")
	must(err)
	if v, _ := client.Get(got, "then"); !reflect.DeepEqual(v, []byte("ws2")) {
		t.Errorf("get_work_spec then = %#v", v)
	}
	if none, err := c.GetWorkSpec(ctx, "nope"); err != nil || none != nil {
		t.Errorf("GetWorkSpec(nope) = %v, %v; want nil, nil", none, err)
	}
	names, err := c.WorkSpecNames(ctx)
	must(err)
	sort.Strings(names)
	if !reflect.DeepEqual(names, []string{"ws1", "ws2"}) {
		t.Errorf("WorkSpecNames = %v", names)
	}

	prio := 5.0
	must(c.AddWorkUnits(ctx, "ws1", []client.NewUnit{
		{Key: []byte("a"), Data: map[any]any{bs("x"): 1}},
		{Key: "b", Data: map[any]any{"t": "text", bs("tuple"): cborrpc.Tuple{1, 2}}},
		{Key: []byte("c"), Data: map[any]any{}, Priority: &prio},
	}))
	var inband *client.InBandError
	if err := c.AddWorkUnits(ctx, "nope", []client.NewUnit{{Key: []byte("a")}}); !errors.As(err, &inband) {
		t.Errorf("AddWorkUnits(nope) = %v, want an in-band error", err)
	}
	counts, err := c.CountWorkUnits(ctx, "ws1")
	must(err)
	if !reflect.DeepEqual(counts, map[int]int64{client.Available: 3}) {
		t.Errorf("counts = %v", counts)
	}
	units, err := c.GetWorkUnits(ctx, "ws1", client.UnitsQuery{States: []int{client.Available}})
	must(err)
	var keys []string
	for _, u := range units {
		k, _ := client.Text(u.Key)
		keys = append(keys, k)
	}
	// By priority, then key.
	if !reflect.DeepEqual(keys, []string{"c", "a", "b"}) {
		t.Errorf("available units = %v", keys)
	}
	if d := units[2].Data; !reflect.DeepEqual(d, map[any]any{"t": "text", bs("tuple"): cborrpc.Tuple{uint64(1), uint64(2)}}) {
		t.Errorf("unit b data = %#v (types must round-trip)", d)
	}
	byKey, err := c.GetWorkUnits(ctx, "ws1", client.UnitsQuery{Keys: []any{[]byte("a"), []byte("zz")}})
	must(err)
	if len(byKey) != 2 || byKey[1].Data != nil {
		t.Errorf("units by key = %v", byKey)
	}
	must(c.PrioritizeWorkUnits(ctx, "ws1", []any{"b"}, nil, nil))

	work, err := c.GetWork(ctx, "w1", client.WorkRequest{LeaseTime: time.Minute})
	must(err)
	if len(work) != 1 || work[0].SpecName() != "ws1" {
		t.Fatalf("GetWork = %v", work)
	}
	if k, _ := client.Text(work[0].Key); k != "c" {
		t.Errorf("GetWork leased %q, want the priority-5 unit c", k)
	}
	st, err := c.GetWorkUnitStatus(ctx, "ws1", []any{work[0].Key, []byte("zz")})
	must(err)
	if st[0] == nil || st[0].Status != client.Pending || !st[0].HasExpiration || st[1] != nil {
		t.Errorf("status = %+v, %+v", st[0], st[1])
	}
	must(c.UpdateWorkUnit(ctx, "ws1", work[0].Key, client.UnitUpdate{Status: client.Failed,
		Data: map[any]any{bs("traceback"): []byte("boom")}, SetData: true}))
	more, err := c.GetWork(ctx, "w1", client.WorkRequest{MaxJobs: 5, LeaseTime: time.Minute})
	must(err)
	if len(more) != 2 {
		t.Errorf("GetWork(max_jobs 5) = %v, want the two units left", more)
	}
	must(c.UpdateWorkUnit(ctx, "ws1", more[0].Key, client.UnitUpdate{Status: client.Finished}))
	none, err := c.GetWork(ctx, "w1", client.WorkRequest{WorkSpecNames: []string{"ws1"}})
	must(err)
	if len(none) != 0 {
		t.Errorf("GetWork with nothing left = %v", none)
	}
	must(c.Retry(ctx, "ws1", work[0].Key))
	counts, err = c.CountWorkUnits(ctx, "ws1")
	must(err)
	// a and b were leased; one finished (chained into ws2), c retried.
	if counts[client.Available] != 1 || counts[client.Pending] != 1 || counts[client.Finished] != 1 {
		t.Errorf("counts after work = %v", counts)
	}
	n, err := c.DelWorkUnits(ctx, "ws1", client.DelQuery{State: client.Finished})
	must(err)
	if n != 1 {
		t.Errorf("DelWorkUnits(finished) = %d", n)
	}

	must(c.PauseWorkSpec(ctx, "ws1", true))
	meta, err := c.GetWorkSpecMeta(ctx, "ws1")
	must(err)
	if meta.Status != client.Paused {
		t.Errorf("meta after pause = %+v", meta)
	}
	must(c.PauseWorkSpec(ctx, "ws1", false))
	if err := c.ControlWorkSpec(ctx, "nope", client.Map{"status": 2}); !errors.As(err, &inband) {
		t.Errorf("ControlWorkSpec(nope) = %v", err)
	}

	parent := "p1"
	must(c.WorkerHeartbeat(ctx, "p1", "RUN", 600, map[any]any{bs("pid"): 7}, nil))
	must(c.WorkerHeartbeat(ctx, "c1", "RUN", 600, nil, &parent))
	modes, err := c.ListWorkerModes(ctx)
	must(err)
	if len(modes) != 2 {
		t.Errorf("ListWorkerModes = %v", modes)
	}
	info, err := c.GetWorkerInfo(ctx, "p1")
	must(err)
	if pid, _ := client.Get(info, "pid"); pid != uint64(7) {
		t.Errorf("GetWorkerInfo = %v", info)
	}
	if _, err := c.GetChildWorkUnits(ctx, "p1"); err != nil {
		t.Error(err)
	}
	if mc, err := c.ModeCounts(ctx); err != nil || len(mc) != 1 {
		t.Errorf("ModeCounts = %v, %v", mc, err)
	}
	if ws, err := c.WorkerStats(ctx); err != nil || ws == nil {
		t.Errorf("WorkerStats = %v, %v", ws, err)
	}
	must(c.WorkerUnregister(ctx, "c1"))
	if _, err := c.GetConfig(ctx); err != nil {
		t.Error(err)
	}
	must(c.Archive(ctx))
	must(c.Archive(ctx, "ws1"))
	if !python {
		if _, err := c.Now(ctx); err != nil {
			t.Error(err)
		}
		gs, err := c.GroupStatus(ctx, "g")
		must(err)
		if _, ok := client.Get(gs, "counts"); !ok {
			t.Errorf("GroupStatus = %v", gs)
		}
		if _, err := c.CancelGroup(ctx, "g"); err != nil {
			t.Error(err)
		}
	}
	var serr *client.ServerError
	if _, err := c.Call(ctx, "no_such_method"); !errors.As(err, &serr) {
		t.Errorf("unknown method: %v, want a ServerError", err)
	}
	must(c.DelWorkSpec(ctx, "ws2"))
	if n, err := c.Clear(ctx); err != nil || n != 1 {
		t.Errorf("Clear = %d, %v", n, err)
	}
}

// TestReconnects: the first connection is dropped by the server; the call
// is re-sent on a new connection and succeeds, as with the Python client.
func TestReconnects(t *testing.T) {
	backend := testdaemon.Ours(t, "memory")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := 0
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			accepted++
			if accepted == 1 {
				buf := make([]byte, 1)
				nc.Read(buf)
				nc.Close()
				continue
			}
			go proxy(nc, backend)
		}
	}()
	cfg := client.DefaultConfig(ln.Addr().String())
	cfg.BaseRetry = time.Millisecond
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.WorkSpecs(context.Background()); err != nil {
		t.Fatalf("call after a dropped connection: %v", err)
	}
	if accepted != 2 {
		t.Errorf("connections = %d, want 2", accepted)
	}
}

func proxy(a net.Conn, addr string) {
	b, err := net.Dial("tcp", addr)
	if err != nil {
		a.Close()
		return
	}
	go func() { copyConn(b, a) }()
	copyConn(a, b)
}

func copyConn(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			dst.Write(buf[:n])
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// TestUnreachableRetriesThenFails: a daemon that is not there costs
// Retries+1 attempts with doubling waits, then a ConnectionError.
func TestUnreachableRetriesThenFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := client.DefaultConfig(addr)
	cfg.Retries = 3
	cfg.BaseRetry = 5 * time.Millisecond
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.WorkSpecs(context.Background())
	var cerr *client.ConnectionError
	if !errors.As(err, &cerr) || cerr.Attempts != 4 || cerr.Addr != addr {
		t.Fatalf("err = %v, want a ConnectionError after 4 attempts", err)
	}
}

// TestContextBoundsACall: a server that never answers; the call returns
// when its context ends.
func TestContextBoundsACall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
		}
	}()
	c, err := client.Dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err = c.Call(ctx, "list_work_specs", client.Map{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
