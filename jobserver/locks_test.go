package jobserver

import (
	"testing"
	"time"
)

// The lock service's tests run on every backend (methodTests): the locks
// live in the backend.

func testLockConflictsWithPrefixAndExtension(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	ab := []any{b("a"), b("b")}
	expect(t, "lock a/b", call(t, js, "lock", b("L1"), 10, []any{ab}), `128([true, null])`)
	// The prefix, the path itself and an extension are all taken, whoever
	// asks; nothing of a refused call is locked.
	expect(t, "lock a", call(t, js, "lock", b("L2"), 10, []any{[]any{b("c")}, []any{b("a")}}),
		`128([false, '[\'a\'] is not lockable'])`)
	expect(t, "lock a/b/c", call(t, js, "lock", b("L1"), 10, []any{[]any{"a", "b", "c"}}),
		`128([false, '[u\'a\', u\'b\', u\'c\'] is not lockable'])`)
	expect(t, "c stayed free", call(t, js, "readlock", []any{[]any{b("c")}, ab}), `[null, 'L1']`)
	// A sibling is free.
	expect(t, "lock a/x", call(t, js, "lock", b("L2"), 10, []any{[]any{b("a"), b("x")}}), `128([true, null])`)
	expect(t, "locksome", call(t, js, "locksome", b("L3"), 10, []any{[]any{b("a")}, []any{b("d"), 1}}),
		`128([[null, ['d', 1]], null])`)
	// A path named twice in one call is one lock (PROTOCOL §8.25): the
	// call succeeds, and one unlock frees it.
	r := []any{b("r")}
	expect(t, "lock r twice", call(t, js, "lock", b("L4"), 10, []any{r, r}), `128([true, null])`)
	expect(t, "locksome r twice", call(t, js, "locksome", b("L4"), 10, []any{[]any{b("s")}, []any{b("s")}}),
		`128([[['s'], ['s']], null])`)
	expect(t, "unlock r", call(t, js, "unlock", b("L4"), []any{r}), `128([true, null])`)
	expect(t, "r free", call(t, js, "readlock", []any{r}), `[null]`)
}

func testLockRenewUnlockAndExpiry(t *testing.T, newServer serverFactory) {
	js, clock := newServer(t, Config{})
	p := []any{[]any{b("x")}}
	expect(t, "lock", call(t, js, "lock", b("me"), 10, p), `128([true, null])`)
	expect(t, "renew by other", call(t, js, "renew", b("you"), 10, p), `128([false, '[\'x\'] is held by me'])`)
	expect(t, "unlock by other", call(t, js, "unlock", b("you"), p), `128([false, '[\'x\'] is held by me'])`)
	clock.Add(8 * time.Second)
	expect(t, "renew", call(t, js, "renew", b("me"), 10, p), `128([true, null])`)
	clock.Add(8 * time.Second) // 16 s after locking, 8 s after renewing
	expect(t, "still held", call(t, js, "readlock", p), `['me']`)
	clock.Add(3 * time.Second)
	expect(t, "expired", call(t, js, "readlock", p), `[null]`)
	expect(t, "renew expired", call(t, js, "renew", b("me"), 10, p), `128([false, '[\'x\'] is held by None'])`)
	expect(t, "unlock expired", call(t, js, "unlock", b("me"), p), `128([false, '[\'x\'] is not held'])`)
	expect(t, "relock", call(t, js, "lock", b("you"), 0, p), `128([true, null])`)
	expect(t, "unlock", call(t, js, "unlock", b("you"), p), `128([true, null])`)
	expect(t, "free again", call(t, js, "lock", b("me"), 10, []any{[]any{}}), `128([true, null])`)
}

func testDeleteNamespaceAndNow(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{})
	call(t, js, "lock", b("me"), 10, []any{[]any{b("ns1"), b("a")}, []any{b("ns2"), b("a")}})
	expect(t, "delete_namespace", call(t, js, "delete_namespace", "ns1"), `0`)
	expect(t, "readlock", call(t, js, "readlock", tuple{[]any{b("ns1"), b("a")}, []any{b("ns2"), b("a")}}), `[null, 'me']`)
	expect(t, "readlock empty", call(t, js, "readlock", []any{}), `[]`)
	expect(t, "now", call(t, js, "now"), `1700000000`)
}
