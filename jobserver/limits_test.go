package jobserver

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// A unit whose data is over the quota is refused with an error naming it,
// and nothing of the call is stored.
func TestUnitDataQuota(t *testing.T) {
	js, _ := newMemoryServer(t, Config{Limits: Limits{MaxUnitData: 100}})
	call(t, js, "set_work_spec", m{"name": []byte("ws")})
	small := m{"x": bytes.Repeat([]byte{1}, 50)}
	big := m{"x": bytes.Repeat([]byte{1}, 200)}
	msg := callErr(t, js, "add_work_units", []byte("ws"), []any{tuple{[]byte("a"), small}, tuple{[]byte("b"), big}})
	if !strings.Contains(msg, "work unit 1") || !strings.Contains(msg, "exceeds the limit of 100 bytes") {
		t.Errorf("add_work_units error %q does not name the unit and the limit", msg)
	}
	expect(t, "count after the refused add", call(t, js, "count_work_units", []byte("ws")), "128([{}, null])")
	call(t, js, "add_work_units", []byte("ws"), []any{tuple{[]byte("a"), small}})
	msg = callErr(t, js, "update_work_unit", []byte("ws"), []byte("a"), m{"status": 3, "data": big})
	if !strings.Contains(msg, "exceeds the limit of 100 bytes") {
		t.Errorf("update_work_unit error %q", msg)
	}
	got := call(t, js, "get_work_units", []byte("ws"), m{})
	if strings.Count(got, "01") != 50 {
		t.Errorf("the refused update changed the data: %s", got)
	}
}

// A lock-service call naming more paths than the quota is refused before
// anything is locked; at the quota it works. Tuples and indefinite-length
// lists count the same.
func TestLockKeysQuota(t *testing.T) {
	js, _ := newMemoryServer(t, Config{Limits: Limits{MaxLockKeys: 3}})
	paths := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = []any{[]byte(fmt.Sprintf("k%d", i))}
		}
		return out
	}
	for _, method := range []string{"lock", "locksome", "renew"} {
		msg := callErr(t, js, method, []byte("me"), 10, paths(4))
		if !strings.Contains(msg, "4 lock paths exceed the limit of 3") {
			t.Errorf("%s with 4 keys: %q", method, msg)
		}
	}
	if msg := callErr(t, js, "readlock", tuple(paths(4))); !strings.Contains(msg, "exceed the limit of 3") {
		t.Errorf("readlock with a 4-key tuple: %q", msg)
	}
	indefinite := cbor.RawMessage(append(append([]byte{0x9F}, encodeAll(t, paths(4))...), 0xFF))
	if msg := callErr(t, js, "unlock", []byte("me"), indefinite); !strings.Contains(msg, "exceed the limit of 3") {
		t.Errorf("unlock with a 4-key indefinite list: %q", msg)
	}
	expect(t, "lock at the quota", call(t, js, "lock", []byte("me"), 10, paths(3)), "128([true, null])")
	expect(t, "readlock after the refusals", call(t, js, "readlock", paths(4)[3:]), "[null]")
}

func encodeAll(t *testing.T, items []any) []byte {
	var out []byte
	for _, it := range items {
		b, err := cbor.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// get_work_units stops adding units once their data passes the reply
// budget, as `limit` does by count, always returning at least one; a
// client pages on with `start`. On both backends (methodTests).
func testGetWorkUnitsReplyBound(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{Limits: Limits{MaxReplyBytes: 1000}})
	call(t, js, "set_work_spec", m{"name": []byte("ws")})
	var items []any
	for i := range 10 {
		items = append(items, tuple{[]byte(fmt.Sprintf("u%d", i)), m{"x": bytes.Repeat([]byte{7}, 290)}})
	}
	call(t, js, "add_work_units", []byte("ws"), items)
	units := func(diag string) int { return strings.Count(diag, "'u") }
	first := call(t, js, "get_work_units", []byte("ws"), m{})
	if n := units(first); n != 3 {
		t.Fatalf("first page has %d units of ~300 bytes under a 1000-byte budget, want 3", n)
	}
	if !strings.Contains(first, "'u2'") || strings.Contains(first, "'u3'") {
		t.Errorf("first page is not u0..u2: %.80s", first)
	}
	next := call(t, js, "get_work_units", []byte("ws"), m{"start": []byte("u2")})
	if n := units(next); n != 3 || !strings.Contains(next, "'u3'") {
		t.Errorf("the page after u2 has %d units: %.80s", n, next)
	}
	byKey := call(t, js, "get_work_units", []byte("ws"), m{"work_unit_keys": []any{[]byte("u5"), []byte("u6"), []byte("u7"), []byte("u8")}})
	if n := units(byKey); n != 3 {
		t.Errorf("by keys: %d units, want 3", n)
	}
	// A unit larger than the whole budget still comes back alone.
	call(t, js, "add_work_units", []byte("ws"), []any{tuple{[]byte("a-big"), m{"x": bytes.Repeat([]byte{7}, 5000)}}})
	if n := units(call(t, js, "get_work_units", []byte("ws"), m{"limit": 5})); n != 0 {
		t.Errorf("a unit over the budget: %d units with 'u, want only the big one", n)
	}
	if got := call(t, js, "get_work_units", []byte("ws"), m{"limit": 5}); !strings.Contains(got, "'a-big'") {
		t.Errorf("the unit over the budget is missing: %.80s", got)
	}
}

// get_work with a large max_jobs leases only the units whose data fits the
// reply budget, always at least one; the rest stay AVAILABLE for the next
// call or another worker. On both backends (methodTests).
func testGetWorkReplyBound(t *testing.T, newServer serverFactory) {
	js, _ := newServer(t, Config{Limits: Limits{MaxReplyBytes: 1000}})
	call(t, js, "set_work_spec", m{"name": []byte("ws")})
	var items []any
	for i := range 7 {
		items = append(items, tuple{[]byte(fmt.Sprintf("u%d", i)), m{"x": bytes.Repeat([]byte{7}, 290)}})
	}
	items = append(items, tuple{[]byte("v-big"), m{"x": bytes.Repeat([]byte{7}, 5000)}})
	call(t, js, "add_work_units", []byte("ws"), items)
	units := func(diag string) int { return strings.Count(diag, "'u") }
	first := call(t, js, "get_work", []byte("w1"), m{"max_jobs": 100})
	if n := units(first); n != 3 || !strings.Contains(first, "'u2'") {
		t.Fatalf("get_work of ~300-byte units under a 1000-byte budget leased %d: %.120s", n, first)
	}
	expect(t, "counts after the first get_work",
		call(t, js, "count_work_units", []byte("ws")), "128([{1: 5, 3: 3}, null])")
	second := call(t, js, "get_work", []byte("w2"), m{"max_jobs": 100})
	if n := units(second); n != 3 || !strings.Contains(second, "'u3'") {
		t.Errorf("second get_work leased %d: %.120s", n, second)
	}
	// u6 then the unit over the whole budget, which comes alone.
	if n := units(call(t, js, "get_work", []byte("w3"), m{"max_jobs": 100})); n != 1 {
		t.Errorf("third get_work leased %d units with 'u, want u6 alone", n)
	}
	if got := call(t, js, "get_work", []byte("w4"), m{"max_jobs": 100}); !strings.Contains(got, "'v-big'") {
		t.Errorf("the unit over the budget is not handed out: %.120s", got)
	}
	expect(t, "counts at the end", call(t, js, "count_work_units", []byte("ws")), "128([{3: 8}, null])")
}
