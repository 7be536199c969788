package coordinatetest

import (
	"github.com/coordinated/coordinated/coordinate"
)

// unitTests cover adding, reading, listing, prioritizing and deleting work
// units (SEMANTICS §5, DECISIONS §4).
var unitTests = []test{
	{"ArbitraryKeys", testUnitArbitraryKeys},
	{"DataVerbatim", testUnitDataVerbatim},
	{"ReAddCompleted", testUnitReAddCompleted},
	{"ReAddAvailable", testUnitReAddAvailable},
	{"ReAddPending", testUnitReAddPending},
	{"ReAddPriority", testUnitReAddPriority},
	{"DuplicateKeysLastWins", testUnitDuplicateKeys},
	{"Counts", testUnitCounts},
	{"ListOrder", testUnitListOrder},
	{"ListStartLimit", testUnitListStartLimit},
	{"ListKeyOrder", testUnitListKeyOrder},
	{"ListMaxBytes", testUnitListMaxBytes},
	{"GetWorkUnits", testUnitGetWorkUnits},
	{"Prioritize", testUnitPrioritize},
	{"DeleteAll", testUnitDeleteAll},
	{"DeleteKeys", testUnitDeleteKeys},
	{"DeleteKeysWithStatus", testUnitDeleteKeysWithStatus},
	{"DeleteStatus", testUnitDeleteStatus},
	{"DeleteEmptyQuery", testUnitDeleteEmpty},
}

func testUnitArbitraryKeys(e *env) {
	e.spec(m{"name": "s"})
	keys := []coordinate.Name{text(""), bin("\x00"), bin("a\x00b"), bin("\xff\xfe"), text("ü"), bin("plain")}
	in := make([]coordinate.WorkUnitInput, len(keys))
	for i, k := range keys {
		in[i] = coordinate.WorkUnitInput{Key: k, Data: enc(e.t, m{"i": i})}
	}
	e.add("s", in...)
	for i, k := range keys {
		u := e.mustGet("s", k.Bytes)
		if u.Key != k {
			e.t.Errorf("key %q echoed as %+v, want %+v", k.Bytes, u.Key, k)
		}
		if u.Status != coordinate.StatusAvailable {
			e.t.Errorf("key %q status %v, want available", k.Bytes, u.Status)
		}
		checkData(e.t, "data of "+k.Bytes, u.Data, m{"i": i})
	}
	// Bytewise order: "" < "\x00" < "a\x00b" < "plain" < "ü" (c3 bc) < "\xff\xfe".
	e.checkKeys("ListWorkUnits", e.list("s", coordinate.WorkUnitQuery{}),
		[]string{"", "\x00", "a\x00b", "plain", "ü", "\xff\xfe"})
	// The text key "ü" and the byte key with the same bytes are one unit.
	e.add("s", coordinate.WorkUnitInput{Key: bin("ü"), Data: enc(e.t, m{"i": 99})})
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusAvailable: len(keys)})
	u := e.mustGet("s", "ü")
	checkData(e.t, "re-added ü", u.Data, m{"i": 99})
	if u.Key != text("ü") {
		e.t.Errorf("key re-added as bytes echoed as %+v, want the first kind (text)", u.Key)
	}
}

func testUnitDataVerbatim(e *env) {
	e.spec(m{"name": "s"})
	// Indefinite-length map, float16, a tag and a non-minimal integer.
	data := coordinate.Data{0xbf,
		0x61, 'a', 0xf9, 0x3e, 0x00,
		0x61, 'b', 0xc1, 0x1a, 0x00, 0x00, 0x00, 0x05,
		0x61, 'c', 0x19, 0x00, 0x01,
		0xff}
	e.add("s", coordinate.WorkUnitInput{Key: text("k"), Data: data})
	checkBytes(e.t, "GetWorkUnits data", e.mustGet("s", "k").Data, data)
	us, err := e.ns.ListWorkUnits(e.ctx, "s", coordinate.WorkUnitQuery{})
	if err != nil || len(us) != 1 {
		e.t.Fatalf("ListWorkUnits = %d, %v", len(us), err)
	}
	checkBytes(e.t, "ListWorkUnits data", us[0].Data, data)
	a := e.workOne("w")
	checkBytes(e.t, "Attempt data", a.Data, data)
	upd := coordinate.Data{0x9f, 0x01, 0xff} // indefinite array [1]
	e.update("s", "k", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished, Data: upd})
	checkBytes(e.t, "data after update", e.mustGet("s", "k").Data, upd)
}

func testUnitReAddCompleted(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.unit("f", m{"v": 1}), e.unit("x", m{"v": 1}))
	e.finish("s", "f", nil)
	e.fail("s", "x")
	e.add("s", e.unit("f", m{"v": 2}), e.unit("x", m{"v": 2}))
	for _, k := range []string{"f", "x"} {
		u := e.mustGet("s", k)
		if u.Status != coordinate.StatusAvailable {
			e.t.Errorf("re-added completed unit %q status = %v, want available", k, u.Status)
		}
		checkData(e.t, "re-added "+k, u.Data, m{"v": 2})
	}
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusAvailable: 2})
	if as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 5}); len(as) != 2 {
		e.t.Errorf("GetWork after re-adding completed units = %q, want both", attemptKeys(as))
	}
}

func testUnitReAddAvailable(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.unit("k", m{"v": 1}))
	e.add("s", e.unit("k", m{"v": 2}))
	u := e.mustGet("s", "k")
	if u.Status != coordinate.StatusAvailable {
		e.t.Errorf("status = %v, want available", u.Status)
	}
	checkData(e.t, "re-added available unit", u.Data, m{"v": 2})
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusAvailable: 1})
}

func testUnitReAddPending(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.unit("k", m{"v": 1}))
	a := e.workOne("w1")
	e.add("s", e.unit("k", m{"v": 2}))
	u := e.mustGet("s", "k")
	if u.Status != coordinate.StatusPending {
		e.t.Errorf("re-added pending unit status = %v, want pending (lease kept)", u.Status)
	}
	if u.Worker == nil || u.Worker.Bytes != "w1" {
		e.t.Errorf("re-added pending unit worker = %v, want w1", u.Worker)
	}
	e.checkTime("re-added pending unit expiration", u.Expiration, a.Expires)
	checkData(e.t, "re-added pending unit", u.Data, m{"v": 2})
	e.noWork(coordinate.WorkRequest{Worker: text("w2")})
	err := e.ns.UpdateAttempt(e.ctx, coordinate.AttemptRef{Spec: "s", Key: "k", ID: a.ID},
		coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
	if err != nil {
		e.t.Errorf("UpdateAttempt after re-add: %v (the lease must survive)", err)
	}
}

func testUnitReAddPriority(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", coordinate.WorkUnitInput{Key: text("k"), Data: enc(e.t, m{}), Priority: ptr(5.0)})
	e.add("s", e.unit("k", m{"v": 2}))
	if p := e.mustGet("s", "k").Priority; p != 5 {
		e.t.Errorf("priority after re-add without priority = %v, want old 5", p)
	}
	e.add("s", coordinate.WorkUnitInput{Key: text("k"), Data: enc(e.t, m{}), Priority: ptr(-3.0)})
	if p := e.mustGet("s", "k").Priority; p != -3 {
		e.t.Errorf("priority after re-add with priority -3 = %v", p)
	}
	e.finish("s", "k", nil)
	e.add("s", e.unit("k", m{}))
	if p := e.mustGet("s", "k").Priority; p != -3 {
		e.t.Errorf("priority after re-adding a finished unit = %v, want old -3", p)
	}
}

func testUnitDuplicateKeys(e *env) {
	e.spec(m{"name": "s"})
	e.add("s",
		coordinate.WorkUnitInput{Key: text("k"), Data: enc(e.t, m{"v": 1}), Priority: ptr(1.0)},
		e.unit("other", m{}),
		coordinate.WorkUnitInput{Key: bin("k"), Data: enc(e.t, m{"v": 2}), Priority: ptr(2.0)},
	)
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusAvailable: 2})
	u := e.mustGet("s", "k")
	checkData(e.t, "duplicate key", u.Data, m{"v": 2})
	if u.Priority != 2 {
		e.t.Errorf("duplicate key priority = %v, want 2 (last wins)", u.Priority)
	}
}

// statusFixture makes a spec "s" with units in each status: a1 a2
// AVAILABLE, p1 PENDING, f1 f2 f3 FINISHED, x1 FAILED.
func statusFixture(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "a1", "a2", "f1", "f2", "f3", "p1", "x1")
	e.update("s", "p1", coordinate.WorkUnitUpdate{Status: coordinate.StatusPending})
	for _, k := range []string{"f1", "f2", "f3"} {
		e.finish("s", k, nil)
	}
	e.fail("s", "x1")
}

func testUnitCounts(e *env) {
	e.spec(m{"name": "empty"})
	if c := e.counts("empty"); len(c) != 0 {
		e.t.Errorf("counts of an empty spec = %v, want none", c)
	}
	statusFixture(e)
	e.checkCounts("s", map[coordinate.Status]int{
		coordinate.StatusAvailable: 2, coordinate.StatusPending: 1,
		coordinate.StatusFinished: 3, coordinate.StatusFailed: 1,
	})
}

func testUnitListOrder(e *env) {
	e.spec(m{"name": "s"})
	e.add("s",
		coordinate.WorkUnitInput{Key: text("d"), Data: enc(e.t, m{}), Priority: ptr(1.0)},
		coordinate.WorkUnitInput{Key: text("c"), Data: enc(e.t, m{}), Priority: ptr(5.0)},
		coordinate.WorkUnitInput{Key: text("b"), Data: enc(e.t, m{}), Priority: ptr(1.0)},
		coordinate.WorkUnitInput{Key: text("a"), Data: enc(e.t, m{}), Priority: ptr(-1.0)},
		coordinate.WorkUnitInput{Key: text("e"), Data: enc(e.t, m{}), Priority: ptr(2.5)},
		coordinate.WorkUnitInput{Key: text("f"), Data: enc(e.t, m{}), Priority: ptr(9.0)},
	)
	e.finish("s", "f", nil)
	avail := []coordinate.Status{coordinate.StatusAvailable}
	e.checkKeys("available by priority then key", e.list("s", coordinate.WorkUnitQuery{Statuses: avail}),
		[]string{"c", "e", "b", "d", "a"})
	e.checkKeys("all by key", e.list("s", coordinate.WorkUnitQuery{}), []string{"a", "b", "c", "d", "e", "f"})
	both := []coordinate.Status{coordinate.StatusAvailable, coordinate.StatusFinished}
	e.checkKeys("available+finished by priority", e.list("s", coordinate.WorkUnitQuery{Statuses: both}),
		[]string{"f", "c", "e", "b", "d", "a"})
	e.checkKeys("finished only", e.list("s", coordinate.WorkUnitQuery{Statuses: []coordinate.Status{coordinate.StatusFinished}}),
		[]string{"f"})
	e.checkKeys("blocked (none)", e.list("s", coordinate.WorkUnitQuery{Statuses: []coordinate.Status{coordinate.StatusBlocked}}), nil)
	// The order is the order GetWork hands them out in.
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 5})
	got := make([]string, len(as))
	for i, a := range as {
		got[i] = a.Key.Bytes
	}
	if len(got) != 5 {
		e.t.Fatalf("GetWork returned %q, want 5 units", got)
	}
	seen := map[string]bool{}
	for _, k := range got {
		seen[k] = true
	}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		if !seen[k] {
			e.t.Errorf("GetWork(max_jobs 5) did not return %q: %q", k, got)
		}
	}
}

func testUnitListStartLimit(e *env) {
	statusFixture(e)
	e.checkKeys("start inclusive", e.list("s", coordinate.WorkUnitQuery{Start: "f2"}), []string{"f2", "f3", "p1", "x1"})
	e.checkKeys("start between keys", e.list("s", coordinate.WorkUnitQuery{Start: "f25"}), []string{"f3", "p1", "x1"})
	e.checkKeys("limit", e.list("s", coordinate.WorkUnitQuery{Limit: 3}), []string{"a1", "a2", "f1"})
	e.checkKeys("start+limit", e.list("s", coordinate.WorkUnitQuery{Start: "a2", Limit: 2}), []string{"a2", "f1"})
	fin := []coordinate.Status{coordinate.StatusFinished}
	e.checkKeys("status+start", e.list("s", coordinate.WorkUnitQuery{Statuses: fin, Start: "f2"}), []string{"f2", "f3"})
	e.checkKeys("status+limit", e.list("s", coordinate.WorkUnitQuery{Statuses: fin, Limit: 2}), []string{"f1", "f2"})
	e.checkKeys("pending", e.list("s", coordinate.WorkUnitQuery{Statuses: []coordinate.Status{coordinate.StatusPending}}), []string{"p1"})
	e.checkKeys("failed", e.list("s", coordinate.WorkUnitQuery{Statuses: []coordinate.Status{coordinate.StatusFailed}}), []string{"x1"})
	e.checkKeys("past the end", e.list("s", coordinate.WorkUnitQuery{Start: "z"}), nil)
}

// testUnitListKeyOrder: KeyOrder lists units of the given statuses by key,
// whatever their priority, so a keyset walk (next Start = last key plus a
// zero byte) lists each unit once even as listed units change status.
func testUnitListKeyOrder(e *env) {
	e.spec(m{"name": "s"})
	for k, prio := range map[string]float64{"a": 1, "b": 1, "c": 1, "d": 2, "e": 3, "f": 1} {
		e.add("s", coordinate.WorkUnitInput{Key: text(k), Data: enc(e.t, m{}), Priority: ptr(prio)})
	}
	e.fail("s", "a")
	e.fail("s", "c")
	e.fail("s", "f")
	failed := []coordinate.Status{coordinate.StatusFailed}
	avail := []coordinate.Status{coordinate.StatusAvailable}
	e.checkKeys("failed by key", e.list("s", coordinate.WorkUnitQuery{Statuses: failed, KeyOrder: true}), []string{"a", "c", "f"})
	e.checkKeys("available by key, limit", e.list("s", coordinate.WorkUnitQuery{Statuses: avail, KeyOrder: true, Limit: 2}), []string{"b", "d"})
	e.checkKeys("available by key from c", e.list("s", coordinate.WorkUnitQuery{Statuses: avail, KeyOrder: true, Start: "c"}), []string{"d", "e"})
	e.checkKeys("available by priority", e.list("s", coordinate.WorkUnitQuery{Statuses: avail, Limit: 2}), []string{"e", "d"})
	var walked []string
	for start := ""; ; {
		page := e.list("s", coordinate.WorkUnitQuery{Statuses: failed, KeyOrder: true, Start: start, Limit: 1})
		if len(page) == 0 {
			break
		}
		walked = append(walked, page...)
		// The unit listed is retried and fails again (behind the walk),
		// an available one fails ahead of it: the walk lists the second
		// and not the first again.
		e.update("s", page[0], coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
		e.fail("s", page[0])
		if page[0] == "c" {
			e.fail("s", "e")
		}
		start = page[0] + "\x00"
	}
	e.checkKeys("keyset walk of the failed units", walked, []string{"a", "c", "e", "f"})
}

// testUnitListMaxBytes: a listing stops at the first unit whose data
// would pass MaxBytes, in key order and in the status order, and always
// lists one.
func testUnitListMaxBytes(e *env) {
	e.spec(m{"name": "s"})
	blob := func(n int) coordinate.Data { return enc(e.t, m{"b": string(make([]byte, n))}) }
	size := int64(len(blob(100)))
	unit := func(k string, n int, prio float64) coordinate.WorkUnitInput {
		return coordinate.WorkUnitInput{Key: text(k), Data: blob(n), Priority: ptr(prio)}
	}
	e.add("s", unit("a", 100, 1), unit("b", 100, 2), unit("c", 1000, 3), unit("d", 100, 4), unit("e", 100, 5))
	e.checkKeys("by key, 3.5 units", e.list("s", coordinate.WorkUnitQuery{MaxBytes: 3*size + size/2}), []string{"a", "b"})
	e.checkKeys("by key from d, 2 units", e.list("s", coordinate.WorkUnitQuery{Start: "d", MaxBytes: 2 * size}), []string{"d", "e"})
	e.checkKeys("by key, under one unit", e.list("s", coordinate.WorkUnitQuery{Start: "c", MaxBytes: 1}), []string{"c"})
	e.checkKeys("by key, limit first", e.list("s", coordinate.WorkUnitQuery{Limit: 1, MaxBytes: 10 * size}), []string{"a"})
	avail := []coordinate.Status{coordinate.StatusAvailable}
	e.checkKeys("by priority, 2.5 units", e.list("s", coordinate.WorkUnitQuery{Statuses: avail, MaxBytes: 2*size + size/2}), []string{"e", "d"})
	e.checkKeys("by priority, limit", e.list("s", coordinate.WorkUnitQuery{Statuses: avail, Limit: 3, MaxBytes: 2*size + size/2}), []string{"e", "d"})
}

func testUnitGetWorkUnits(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.unit("a", m{"v": "a"}), e.unit("b", m{"v": "b"}))
	us, err := e.ns.GetWorkUnits(e.ctx, "s", []string{"b", "missing", "a", "b"})
	if err != nil {
		e.t.Fatalf("GetWorkUnits: %v", err)
	}
	if len(us) != 4 {
		e.t.Fatalf("GetWorkUnits returned %d entries, want 4 (request order, nil for missing)", len(us))
	}
	for i, want := range []string{"b", "", "a", "b"} {
		switch {
		case want == "" && us[i] != nil:
			e.t.Errorf("entry %d = %q, want nil for a missing key", i, us[i].Key.Bytes)
		case want != "" && (us[i] == nil || us[i].Key.Bytes != want):
			e.t.Errorf("entry %d = %v, want %q", i, us[i], want)
		case want != "":
			checkData(e.t, "GetWorkUnits "+want, us[i].Data, m{"v": want})
			if us[i].Spec.Bytes != "s" {
				e.t.Errorf("entry %d spec = %q, want s", i, us[i].Spec.Bytes)
			}
		}
	}
}

func testUnitPrioritize(e *env) {
	e.spec(m{"name": "s"})
	e.add("s",
		coordinate.WorkUnitInput{Key: text("a"), Data: enc(e.t, m{}), Priority: ptr(1.0)},
		coordinate.WorkUnitInput{Key: text("b"), Data: enc(e.t, m{}), Priority: ptr(2.0)},
		coordinate.WorkUnitInput{Key: text("c"), Data: enc(e.t, m{}), Priority: ptr(3.0)},
	)
	e.finish("s", "c", nil)
	// It reports the units it changed, not the keys it was given.
	if n, err := e.ns.PrioritizeWorkUnits(e.ctx, "s", []string{"a", "c", "unknown"}, ptr(10.0), 0); err != nil || n != 2 {
		e.t.Fatalf("PrioritizeWorkUnits set = %d, %v; want 2 units changed", n, err)
	}
	// A key named twice is adjusted twice, as Python's loop over the
	// keys did, and counted once.
	if n, err := e.ns.PrioritizeWorkUnits(e.ctx, "s", []string{"b", "nope", "b"}, nil, -2.25); err != nil || n != 1 {
		e.t.Fatalf("PrioritizeWorkUnits adjust = %d, %v; want 1 unit changed", n, err)
	}
	if n, err := e.ns.PrioritizeWorkUnits(e.ctx, "s", []string{"nope"}, ptr(1.0), 0); err != nil || n != 0 {
		e.t.Fatalf("PrioritizeWorkUnits of an unknown key = %d, %v; want 0 and no error", n, err)
	}
	for k, want := range map[string]float64{"a": 10, "b": -2.5, "c": 10} {
		if got := e.mustGet("s", k).Priority; got != want {
			e.t.Errorf("priority of %q = %v, want %v", k, got, want)
		}
	}
	if got := e.get("s", "unknown"); got != nil {
		e.t.Errorf("prioritizing an unknown key created it: %+v", got)
	}
	if a := e.workOne("w"); a.Key.Bytes != "a" || a.Priority != 10 {
		e.t.Errorf("GetWork after prioritize = %q priority %v, want a at 10", a.Key.Bytes, a.Priority)
	}
	// Adjusting a pending unit takes effect when it comes back.
	if _, err := e.ns.PrioritizeWorkUnits(e.ctx, "s", []string{"a"}, nil, -20); err != nil {
		e.t.Fatalf("PrioritizeWorkUnits pending: %v", err)
	}
	e.update("s", "a", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	if a := e.workOne("w"); a.Key.Bytes != "b" {
		e.t.Errorf("GetWork after lowering a = %q, want b", a.Key.Bytes)
	}
}

func testUnitDeleteAll(e *env) {
	statusFixture(e)
	n, err := e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{All: true, Keys: []string{"a1"}})
	if err != nil || n != 7 {
		e.t.Errorf("DeleteWorkUnits(all) = %d, %v; want 7", n, err)
	}
	e.checkCounts("s", nil)
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
}

func testUnitDeleteKeys(e *env) {
	statusFixture(e)
	n, err := e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{Keys: []string{"a1", "p1", "f1", "missing"}})
	if err != nil || n != 3 {
		e.t.Errorf("DeleteWorkUnits(keys) = %d, %v; want 3", n, err)
	}
	e.checkKeys("remaining", e.list("s", coordinate.WorkUnitQuery{}), []string{"a2", "f2", "f3", "x1"})
}

func testUnitDeleteKeysWithStatus(e *env) {
	statusFixture(e)
	n, err := e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{
		Keys: []string{"a1", "f1", "f2", "x1"}, Statuses: []coordinate.Status{coordinate.StatusFinished, coordinate.StatusFailed},
	})
	if err != nil || n != 3 {
		e.t.Errorf("DeleteWorkUnits(keys+status) = %d, %v; want 3", n, err)
	}
	e.checkKeys("remaining", e.list("s", coordinate.WorkUnitQuery{}), []string{"a1", "a2", "f3", "p1"})
}

func testUnitDeleteStatus(e *env) {
	statusFixture(e)
	n, err := e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{Statuses: []coordinate.Status{coordinate.StatusFinished}})
	if err != nil || n != 3 {
		e.t.Errorf("DeleteWorkUnits(finished) = %d, %v; want 3", n, err)
	}
	e.checkKeys("remaining", e.list("s", coordinate.WorkUnitQuery{}), []string{"a1", "a2", "p1", "x1"})
	n, err = e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{Statuses: []coordinate.Status{coordinate.StatusAvailable, coordinate.StatusPending}})
	if err != nil || n != 3 {
		e.t.Errorf("DeleteWorkUnits(available, pending) = %d, %v; want 3", n, err)
	}
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusFailed: 1})
}

func testUnitDeleteEmpty(e *env) {
	statusFixture(e)
	n, err := e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{})
	if err != nil || n != 0 {
		e.t.Errorf("DeleteWorkUnits({}) = %d, %v; want 0", n, err)
	}
	n, err = e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{Keys: []string{}})
	if err != nil || n != 0 {
		e.t.Errorf("DeleteWorkUnits(no keys) = %d, %v; want 0", n, err)
	}
	e.checkCounts("s", map[coordinate.Status]int{
		coordinate.StatusAvailable: 2, coordinate.StatusPending: 1,
		coordinate.StatusFinished: 3, coordinate.StatusFailed: 1,
	})
	// An empty query still reports an unknown spec: del_work_units
	// answers (0, "no such work_spec") before "no usable options", as Py.
	_, err = e.ns.DeleteWorkUnits(e.ctx, "nope", coordinate.DeleteQuery{})
	e.wantErr("DeleteWorkUnits({}) of an unknown spec", err, coordinate.ErrNoSuchWorkSpec)
}
