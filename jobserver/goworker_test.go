package jobserver

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/pyvalue"
	"github.com/fxamacker/cbor/v2"
)

// A Go worker asks for its runtime and tasks; a Python request (no
// options) never sees runtime specs.
func testGoWorkerGetWork(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	addSpec(t, js, "py", nil)
	addSpec(t, js, "hello", m{"runtime": "go"})
	addSpec(t, js, "greet", m{"runtime": "go", "task": "hello2"})
	call(t, js, "add_work_units", b("py"), []any{tuple{b("p"), m{}}})
	call(t, js, "add_work_units", b("hello"), []any{tuple{b("h"), m{}}})
	call(t, js, "add_work_units", b("greet"), []any{tuple{b("g"), m{}}})

	expect(t, "python worker", call(t, js, "get_work", b("w"), m{"max_jobs": 10}), `128([[128(['py', 'p', {}])], null])`)
	expect(t, "python worker again", call(t, js, "get_work", b("w"), m{"max_jobs": 10}), `128([[], null])`)
	expect(t, "no tasks", call(t, js, "get_work", b("w"), m{"max_jobs": 10, "runtime": "go", "tasks": []any{}}), `128([[], null])`)
	expect(t, "task hello2", call(t, js, "get_work", b("w"), m{"max_jobs": 10, "runtime": "go", "tasks": []any{"hello2", "x"}}),
		`128([[128(['greet', 'g', {}])], null])`)
	expect(t, "any task", call(t, js, "get_work", b("w"), m{"max_jobs": 10, "runtime": b("go")}), `128([[128(['hello', 'h', {}])], null])`)
	if msg := callErr(t, js, "get_work", b("w"), m{"runtime": 5}); !strings.Contains(msg, "runtime") {
		t.Errorf("runtime 5: error %q does not name the option", msg)
	}
	if msg := callErr(t, js, "get_work", b("w"), m{"tasks": 5}); !strings.Contains(msg, "tasks") {
		t.Errorf("tasks 5: error %q does not name the option", msg)
	}
}

// getWorkToken leases one unit with a lease token and returns the token.
func getWorkToken(t *testing.T, js *JobServer, worker string, leaseSeconds int) uint64 {
	t.Helper()
	res, err := js.Handle(context.Background(), request(t, "get_work", b(worker),
		m{"lease_time": leaseSeconds, "runtime": "go", "lease_token": true}))
	if err != nil {
		t.Fatal(err)
	}
	var reply cbor.Tag
	if err := cbor.Unmarshal(res.(cbor.RawMessage), &reply); err != nil {
		t.Fatal(err)
	}
	work := reply.Content.([]any)[0].(cbor.Tag).Content.([]any)
	if len(work) != 4 {
		t.Fatalf("get_work with lease_token: %s, want (spec, key, data, token)", diag(t, res))
	}
	tok, ok := work[3].(uint64)
	if !ok || tok == 0 {
		t.Fatalf("get_work with lease_token: token %#v", work[3])
	}
	return tok
}

// A late finish under a lapsed lease is refused when fenced and accepted,
// as before, when not.
func testLeaseTokenFencing(t *testing.T, newServer serverFactory) {
	js, clock := newServer(t, Config{})
	addSpec(t, js, "go", m{"runtime": "go"})
	call(t, js, "add_work_units", b("go"), []any{tuple{b("a"), m{"n": 1}}})
	first := getWorkToken(t, js, "w1", 10)
	clock.Add(11 * time.Second)
	second := getWorkToken(t, js, "w2", 10)
	if first == second {
		t.Fatalf("re-lease got the same token %d", first)
	}
	late := call(t, js, "update_work_unit", b("go"), b("a"), m{"status": 4, "data": m{"by": "w1"}, "lease_token": first})
	if !strings.HasPrefix(late, "128([false, ") || !strings.Contains(late, "lease lost") {
		t.Fatalf("late fenced finish: %s, want (false, lease lost)", late)
	}
	expect(t, "still w2's", call(t, js, "get_work_unit_status", b("go"), []any{b("a")}),
		`128([[{'status': 3, 'worker_id': 'w2', 'expiration': `+pyvalue.Float(float64(start.Unix())+21)+`}], null])`)
	expect(t, "current fenced renew", call(t, js, "update_work_unit", b("go"), b("a"), m{"lease_time": 30, "lease_token": second}), `128([true, null])`)
	expect(t, "current fenced finish", call(t, js, "update_work_unit", b("go"), b("a"), m{"status": 4, "data": m{"by": "w2"}, "lease_token": second}), `128([true, null])`)
	again := call(t, js, "update_work_unit", b("go"), b("a"), m{"status": 5, "lease_token": second})
	if !strings.Contains(again, "lease lost") {
		t.Errorf("fenced fail after finish: %s, want lease lost", again)
	}
	expect(t, "finished by w2", call(t, js, "get_work_units", b("go"), m{}), `128([[128(['a', {'by': "w2"}])], null])`)
	if msg := callErr(t, js, "update_work_unit", b("go"), b("a"), m{"status": 4, "lease_token": -1}); !strings.Contains(msg, "lease_token") {
		t.Errorf("negative token: error %q", msg)
	}

	// The legacy protocol, unchanged: a late finish overwrites.
	addSpec(t, js, "py", nil)
	call(t, js, "add_work_units", b("py"), []any{tuple{b("p"), m{}}})
	call(t, js, "get_work", b("w1"), m{"lease_time": 10})
	clock.Add(11 * time.Second)
	call(t, js, "get_work", b("w2"), m{"lease_time": 10})
	expect(t, "late legacy finish", call(t, js, "update_work_unit", b("py"), b("p"), m{"status": 4, "data": m{"by": "w1"}}), `128([true, null])`)
	expect(t, "finished by w1", call(t, js, "get_work_units", b("py"), m{}), `128([[128(['p', {'by': "w1"}])], null])`)
}

// waiters reports how many get_work calls are waiting.
func waiters(js *JobServer) int {
	js.waits.mu.Lock()
	defer js.waits.mu.Unlock()
	return js.waits.n
}

// waitUntil polls cond (real time) with a generous failure timeout.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// notWoken is how long a test waits for a waiting get_work (wait 30 s)
// to be answered: a waiter nothing woke is answered only at the end of
// its wait.
const notWoken = 20 * time.Second

// waitThenChange starts a get_work by worker with a 30 s wait (and opts),
// lets it wait, runs change, and checks that the call is answered with
// want before notWoken; what names the change in the failure.
func waitThenChange(t *testing.T, js *JobServer, worker string, opts m, change func(), what, want string) {
	t.Helper()
	req := m{"runtime": "go", "wait": 30}
	for k, v := range opts {
		req[k] = v
	}
	got := make(chan string, 1)
	go func() { got <- call(t, js, "get_work", b(worker), req) }()
	waitUntil(t, "the get_work to wait", func() bool { return waiters(js) == 1 })
	change()
	select {
	case res := <-got:
		expect(t, "woken "+what, res, want)
	case <-time.After(notWoken):
		t.Fatalf("the waiting get_work was not answered %s", what)
	}
}

// A get_work with `wait` is answered when work arrives; StopWaiting
// answers the waiting ones and makes later waits return at once.
func testGetWorkWait(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	addSpec(t, js, "go", m{"runtime": "go"})
	expect(t, "short wait, no work", call(t, js, "get_work", b("w"), m{"runtime": "go", "wait": 0.01}),
		`128([128([null, null, null]), null])`)

	waitThenChange(t, js, "w", m{"max_jobs": 5}, func() {
		call(t, js, "add_work_units", b("go"), []any{tuple{b("a"), m{}}})
	}, "by the add", `128([[128(['go', 'a', {}])], null])`)
	// A unit given back wakes a waiter too.
	waitThenChange(t, js, "w2", nil, func() {
		call(t, js, "update_work_unit", b("go"), b("a"), m{"status": 1})
	}, "by the give-back", `128([128(['go', 'a', {}]), null])`)
	waitThenChange(t, js, "w", nil, js.StopWaiting, "by StopWaiting", `128([128([null, null, null]), null])`)

	expect(t, "after stop", call(t, js, "get_work", b("w"), m{"runtime": "go", "wait": 30}), `128([128([null, null, null]), null])`)
	if msg := callErr(t, js, "get_work", b("w"), m{"wait": "soon"}); !strings.Contains(msg, "wait") {
		t.Errorf("wait 'soon': error %q does not name the option", msg)
	}
}

// testGetWorkWaitWakesWhenDue: on a coordinate.DueReporter (both
// backends) a waiting get_work tries again when a delayed unit's delay
// ends and when a lease runs out, instead of at the end of its wait.
// Delays and leases are on the fake clock; the wait is real time.
func testGetWorkWaitWakesWhenDue(t *testing.T, newServer serverFactory) {
	js, clock := newServer(t, Config{})
	addSpec(t, js, "go", m{"runtime": "go"})
	call(t, js, "add_work_units", b("go"), []any{tuple{b("later"), m{}, m{"delay": 1}}})
	waitThenChange(t, js, "w", nil, func() { clock.Add(time.Second) },
		"when the delay ended", `128([128(['go', 'later', {}]), null])`)

	// The unit is leased for 2 s; when the lease runs out, a waiter gets it.
	expect(t, "renew", call(t, js, "update_work_unit", b("go"), b("later"), m{"lease_time": 2}), `128([true, null])`)
	waitThenChange(t, js, "w2", nil, func() { clock.Add(3 * time.Second) },
		"when the lease ran out", `128([128(['go', 'later', {}]), null])`)
}

// testGetWorkWaitWakesWhenDependencyFinishes: on a coordinate.WorkNotifier
// (both backends) a waiting get_work is woken when the units it could take
// are unblocked by their dependency finishing, a change the jobserver's
// own methods cannot see.
func testGetWorkWaitWakesWhenDependencyFinishes(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	addSpec(t, js, "go", m{"runtime": "go"})
	call(t, js, "add_work_units", b("go"), []any{tuple{b("a"), m{}}})
	call(t, js, "add_work_units", b("go"), []any{
		tuple{b("b1"), m{}, m{"depends_on": []any{[]any{b("go"), b("a")}}}},
		tuple{b("b2"), m{}, m{"depends_on": []any{[]any{b("go"), b("a")}}}},
	})
	expect(t, "a first", call(t, js, "get_work", b("w1"), m{"runtime": "go"}), `128([128(['go', 'a', {}]), null])`)
	waitThenChange(t, js, "w2", nil, func() {
		expect(t, "finish a", call(t, js, "update_work_unit", b("go"), b("a"), m{"status": 4}), `128([true, null])`)
	}, "when its dependency finished", `128([128(['go', 'b1', {}]), null])`)

	// A finish of a unit that was not leased (on PostgreSQL the general
	// path, not the fast statement) wakes a waiter too.
	expect(t, "b2", call(t, js, "get_work", b("w1"), m{"runtime": "go"}), `128([128(['go', 'b2', {}]), null])`)
	call(t, js, "add_work_units", b("go"), []any{tuple{b("c"), m{}, m{"depends_on": []any{[]any{b("go"), b("x")}}}}})
	call(t, js, "add_work_units", b("go"), []any{tuple{b("x"), m{}, m{"delay": 3600}}})
	waitThenChange(t, js, "w3", nil, func() {
		expect(t, "finish x unleased", call(t, js, "update_work_unit", b("go"), b("x"), m{"status": 4}), `128([true, null])`)
	}, "when its unleased dependency finished", `128([128(['go', 'c', {}]), null])`)
}

// testGetWorkWaitWakesWhenMaxRunningSlotFrees: on a coordinate.WorkNotifier
// (both backends) a waiting get_work is woken when a spec at its
// max_running finishes a unit and so may hand out the next one.
func testGetWorkWaitWakesWhenMaxRunningSlotFrees(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	addSpec(t, js, "go", m{"runtime": "go", "max_running": 1})
	call(t, js, "add_work_units", b("go"), []any{tuple{b("a"), m{}}, tuple{b("b"), m{}}})
	expect(t, "a first", call(t, js, "get_work", b("w1"), m{"runtime": "go"}), `128([128(['go', 'a', {}]), null])`)
	waitThenChange(t, js, "w2", nil, func() {
		expect(t, "finish a", call(t, js, "update_work_unit", b("go"), b("a"), m{"status": 4}), `128([true, null])`)
	}, "when the max_running slot freed", `128([128(['go', 'b', {}]), null])`)
}

// A `wait` too long for a time.Duration (or infinite) waits the longest a
// get_work may, not at all (the conversion used to overflow to a
// negative wait).
func TestGetWorkWaitSaturates(t *testing.T) {
	for _, sec := range []any{1e300, math.Inf(1), uint64(1) << 62, 31, 30.0} {
		raw, err := cbor.Marshal(sec)
		if err != nil {
			t.Fatal(err)
		}
		var req coordinate.WorkRequest
		_, wait, err := goWorkerRequest(options{optWait: raw}, &req)
		if err != nil || wait != MaxGetWorkWait {
			t.Errorf("wait %v: %v %v, want %v", sec, wait, err, MaxGetWorkWait)
		}
	}
}
