package jobserver

import (
	"math/big"
	"testing"
	"time"
)

func testWorkerRegistry(t *testing.T, newServer serverFactory) {
	js, clock := newServer(t, Config{})
	expect(t, "no workers", call(t, js, "list_worker_modes"), `128([{}, null])`)
	expect(t, "stats empty", call(t, js, "worker_stats"), `{'num_workers': 0, 'num_children': 0, 'num_expirable': 0}`)

	expect(t, "negative expiry", call(t, js, "worker_heartbeat", b("a"), b("RUN"), -5, m{"pid": 1, "memory": tuple{1.5, 2}}, nil),
		`128([true, 'negative expire time -5 defaulted to 5 minutes'])`)
	expect(t, "huge expiry", call(t, js, "worker_heartbeat", b("b"), nil, 100000, nil, b("a")),
		`128([true, 'huge expire time 100000 defaulted to one hour'])`)
	expect(t, "text id", call(t, js, "worker_heartbeat", "c", "RUN", 6000, map[string]any{"age_seconds": 99}, nil),
		`128([true, null])`)

	expect(t, "modes", call(t, js, "list_worker_modes"), `128([{'a': 'RUN', 'b': null, "c": "RUN"}, null])`)
	expect(t, "mode counts", call(t, js, "mode_counts"), `128([{'RUN': 1, null: 1, "RUN": 1}, null])`)
	expect(t, "stats", call(t, js, "worker_stats"), `{'num_workers': 3, 'num_children': 1, 'num_expirable': 3}`)

	clock.Add(2500 * time.Millisecond)
	expect(t, "info adds age_seconds", call(t, js, "get_worker_info", b("a")),
		`128([{'pid': 1, 'memory': 128([1.5, 2]), 'age_seconds': 2.5}, null])`)
	expect(t, "info replaces a sent age_seconds", call(t, js, "get_worker_info", "c"),
		`128([{'age_seconds': 2.5}, null])`)
	expect(t, "info null data", call(t, js, "get_worker_info", b("b")), `128([null, null])`)
	expect(t, "info unknown", call(t, js, "get_worker_info", b("zz")), `128([null, null])`)

	expect(t, "unregister unknown", call(t, js, "worker_unregister", b("zz")), `128([false, 'no worker \'zz\''])`)
	expect(t, "unregister", call(t, js, "worker_unregister", b("b")), `128([true, null])`)
	expect(t, "unregistered", call(t, js, "worker_stats"), `{'num_workers': 2, 'num_children': 0, 'num_expirable': 2}`)

	clock.Add(301 * time.Second) // a's record (300 s) expires
	expect(t, "expired", call(t, js, "list_worker_modes"), `128([{"c": "RUN"}, null])`)
	expect(t, "expired info", call(t, js, "get_worker_info", b("a")), `128([null, null])`)
}

// The warnings show expire_seconds as Python's str() did, and a null is
// below every number, as in Python 2: 300 s and "None" (Python compared
// `None < 0`; not a TypeError).
func testWorkerExpireShown(t *testing.T, newServer serverFactory) {
	js, clock := newServer(t, Config{})
	for _, tc := range []struct {
		in   any
		want string
	}{
		{-1.0, `128([true, 'negative expire time -1.0 defaulted to 5 minutes'])`},
		{-1, `128([true, 'negative expire time -1 defaulted to 5 minutes'])`},
		{1e20, `128([true, 'huge expire time 1e+20 defaulted to one hour'])`},
		{86400.5, `128([true, 'huge expire time 86400.5 defaulted to one hour'])`},
		{uint64(1 << 63), `128([true, 'huge expire time 9223372036854775808 defaulted to one hour'])`},
		{new(big.Int).Exp(big.NewInt(10), big.NewInt(20), nil), `128([true, 'huge expire time 100000000000000000000 defaulted to one hour'])`},
		{nil, `128([true, 'negative expire time None defaulted to 5 minutes'])`},
		{-0.30000000000000004, `128([true, 'negative expire time -0.3 defaulted to 5 minutes'])`}, // str(), not repr()
		{1e11, `128([true, 'huge expire time 1e+11 defaulted to one hour'])`},
		{b("1e9"), `128([true, 'huge expire time 1e9 defaulted to one hour'])`}, // a numeric string as sent
		{"-2.50", `128([true, 'negative expire time -2.50 defaulted to 5 minutes'])`},
	} {
		expect(t, "expire_seconds", call(t, js, "worker_heartbeat", b("w"), b("RUN"), tc.in, nil, nil), tc.want)
	}
	clock.Add(299 * time.Second)
	expect(t, "a null lives 300 s", call(t, js, "list_worker_modes"), `128([{'w': 'RUN'}, null])`)
	clock.Add(2 * time.Second)
	expect(t, "then expires", call(t, js, "list_worker_modes"), `128([{}, null])`)
}
