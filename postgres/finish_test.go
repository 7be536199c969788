package postgres

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// fastEnv is a backend on a fresh schema with a test clock, for tests that
// look at which path the committer took.
type fastEnv struct {
	t     *testing.T
	b     *Backend
	ns    coordinate.Namespace
	clock *coordinate.FakeClock
}

func newFastEnv(t *testing.T) *fastEnv { return newFastEnvWith(t, Options{}) }

// newFastEnvWith is newFastEnv with options (its clock replaces opts.Clock;
// MaxConns defaults to 4).
func newFastEnvWith(t *testing.T, opts Options) *fastEnv {
	t.Helper()
	clock := coordinate.NewFakeClock(time.Unix(1_700_000_000, 0))
	opts.Clock = clock
	if opts.MaxConns == 0 {
		opts.MaxConns = 4
	}
	b, ns := openBackend(t, freshSchema(t), opts)
	return &fastEnv{t: t, b: b, ns: ns, clock: clock}
}

func (e *fastEnv) spec(def map[string]any) {
	e.t.Helper()
	raw, _ := cbor.Marshal(def)
	if _, err := e.ns.SetWorkSpec(e.t.Context(), raw); err != nil {
		e.t.Fatal(err)
	}
}

func (e *fastEnv) add(spec string, units ...coordinate.WorkUnitInput) {
	e.t.Helper()
	if err := e.ns.AddWorkUnits(e.t.Context(), spec, units); err != nil {
		e.t.Fatal(err)
	}
}

func (e *fastEnv) claim(spec string, n int) []coordinate.Attempt {
	e.t.Helper()
	as, err := e.ns.GetWork(e.t.Context(), coordinate.WorkRequest{
		Worker: coordinate.Name{Bytes: "w", Text: true}, WorkSpecs: []string{spec}, MaxJobs: n, LeaseTime: time.Minute})
	if err != nil || len(as) != n {
		e.t.Fatalf("GetWork(%s, %d) = %d attempts, %v", spec, n, len(as), err)
	}
	return as
}

// paths returns how many updates took the fast path and fell through
// since the last call.
func (e *fastEnv) paths() (fast, fellThrough int64) {
	return e.b.commits.fast.Swap(0), e.b.commits.fellThrough.Swap(0)
}

func (e *fastEnv) status(spec, key string) coordinate.Status {
	e.t.Helper()
	us, err := e.ns.GetWorkUnits(e.t.Context(), spec, []string{key})
	if err != nil || len(us) != 1 {
		e.t.Fatalf("GetWorkUnits(%s, %s) = %v, %v", spec, key, us, err)
	}
	return us[0].Status
}

// chainingSpecs defines the specs "first", which chains to "second", and
// "second".
func (e *fastEnv) chainingSpecs() {
	e.spec(map[string]any{"name": "first", "then": "second"})
	e.spec(map[string]any{"name": "second"})
}

// numbered returns n units with keys u00000, u00001, ... and empty data.
func numbered(n int) []coordinate.WorkUnitInput {
	in := make([]coordinate.WorkUnitInput, n)
	for i := range in {
		in[i] = unit(fmt.Sprintf("u%05d", i), map[string]any{})
	}
	return in
}

func unit(key string, data any) coordinate.WorkUnitInput {
	raw, _ := cbor.Marshal(data)
	return coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: key, Text: true}, Data: raw}
}

var finish = coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}

// TestFastFinish: finishing held units takes the fast path, keeps counts
// and stores the data given.
func TestFastFinish(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.spec(map[string]any{"name": "s"})
	for i := range 5 {
		e.add("s", unit(fmt.Sprintf("k%d", i), map[string]any{"n": i}))
	}
	as := e.claim("s", 5)
	e.paths()
	for _, a := range as[:3] {
		if err := e.ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "s", Key: a.Key.Bytes, ID: a.ID}, finish); err != nil {
			t.Fatal(err)
		}
	}
	done, _ := cbor.Marshal(map[string]any{"result": "ok"})
	if err := e.ns.UpdateWorkUnit(ctx, "s", as[3].Key.Bytes, coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished, Data: done}); err != nil {
		t.Fatal(err)
	}
	if fast, fell := e.paths(); fast != 4 || fell != 0 {
		t.Errorf("fast path took %d, fell through %d; want 4, 0", fast, fell)
	}
	counts, err := e.ns.CountWorkUnits(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if counts[coordinate.StatusFinished] != 4 || counts[coordinate.StatusPending] != 1 || len(counts) != 2 {
		t.Errorf("counts = %v, want 4 finished, 1 pending", counts)
	}
	us, err := e.ns.GetWorkUnits(ctx, "s", []string{as[3].Key.Bytes, as[0].Key.Bytes})
	if err != nil || len(us) != 2 {
		t.Fatalf("GetWorkUnits = %v, %v", us, err)
	}
	for _, u := range us {
		if u.Status != coordinate.StatusFinished || !u.Expiration.Equal(e.clock.Now()) || u.Worker == nil || u.Worker.Bytes != "w" {
			t.Errorf("%s: status %v, expiration %v, worker %v; want finished now by w", u.Key.Bytes, u.Status, u.Expiration, u.Worker)
		}
		if u.Key.Bytes == as[3].Key.Bytes && string(u.Data) != string(done) {
			t.Errorf("%s data = %x, want %x", u.Key.Bytes, u.Data, done)
		}
	}
}

// TestFastFinishFallsThrough: updates the fast statement does not match get
// the general path's result.
func TestFastFinishFallsThrough(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.spec(map[string]any{"name": "s"})
	e.add("s", unit("a", map[string]any{}), unit("b", map[string]any{}), unit("c", map[string]any{}))
	as := e.claim("s", 2)
	e.paths()

	// A stale lease id: ErrLostLease, nothing changes.
	err := e.ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "s", Key: as[0].Key.Bytes, ID: as[0].ID + 1000}, finish)
	if !errors.Is(err, coordinate.ErrLostLease) {
		t.Errorf("stale lease: %v, want ErrLostLease", err)
	}
	if st := e.status("s", as[0].Key.Bytes); st != coordinate.StatusPending {
		t.Errorf("after a stale finish %s is %v, want pending", as[0].Key.Bytes, st)
	}
	// A unit nobody holds (legacy finish of an available unit) finishes.
	if err := e.ns.UpdateWorkUnit(ctx, "s", "c", finish); err != nil {
		t.Errorf("finishing available c: %v", err)
	}
	// A missing unit and a missing spec give their errors.
	if err := e.ns.UpdateWorkUnit(ctx, "s", "nope", finish); !errors.Is(err, coordinate.ErrNoSuchWorkUnit) {
		t.Errorf("missing unit: %v, want ErrNoSuchWorkUnit", err)
	}
	if err := e.ns.UpdateWorkUnit(ctx, "nope", "a", finish); !errors.Is(err, coordinate.ErrNoSuchWorkSpec) {
		t.Errorf("missing spec: %v, want ErrNoSuchWorkSpec", err)
	}
	// A lease that ended: the unit is released first, then finished (the
	// general path's rule), and the old attempt has lost its lease.
	e.clock.Add(2 * time.Minute)
	if err := e.ns.UpdateWorkUnit(ctx, "s", as[1].Key.Bytes, finish); err != nil {
		t.Errorf("finishing %s after its lease: %v", as[1].Key.Bytes, err)
	}
	if st := e.status("s", as[1].Key.Bytes); st != coordinate.StatusFinished {
		t.Errorf("%s is %v, want finished", as[1].Key.Bytes, st)
	}
	if fast, fell := e.paths(); fast != 0 || fell != 5 {
		t.Errorf("fast path took %d, fell through %d; want 0, 5", fast, fell)
	}
	counts, err := e.ns.CountWorkUnits(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	// a's lease has ended too: it is available again.
	if counts[coordinate.StatusFinished] != 2 || counts[coordinate.StatusAvailable] != 1 || len(counts) != 2 {
		t.Errorf("counts = %v, want 2 finished, 1 available", counts)
	}
}

// TestFastFinishChaining: a finish whose stored data chains goes
// through the general path; one whose data sent chains takes the fast
// chaining statement (finish_chain.sql), and so does one whose spec has
// no `then` (chaining nothing); data that chains nothing, finish.sql.
// The second spec gets the units of both chaining finishes.
func TestFastFinishChaining(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.chainingSpecs()
	e.add("first",
		unit("stored", map[string]any{"output": []any{"from-stored"}}),
		unit("sent", map[string]any{}),
		unit("plain", map[string]any{}),
		unit("unchained", map[string]any{}))
	e.claim("first", 4)
	e.paths()
	// Output in the stored data: the general path, which chains.
	if err := e.ns.UpdateWorkUnit(ctx, "first", "stored", finish); err != nil {
		t.Fatal(err)
	}
	if fast, fell := e.paths(); fast != 0 || fell != 1 {
		t.Errorf("stored output: fast %d, fell through %d; want 0, 1", fast, fell)
	}
	// Output in the data sent: the fast path chains it.
	out, _ := cbor.Marshal(map[string]any{"output": []any{"from-sent"}})
	if err := e.ns.UpdateWorkUnit(ctx, "first", "sent", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished, Data: out}); err != nil {
		t.Fatal(err)
	}
	if fast, fell := e.paths(); fast != 1 || fell != 0 {
		t.Errorf("sent output: fast %d, fell through %d; want 1, 0", fast, fell)
	}
	// Data that chains nothing: the fast path.
	none, _ := cbor.Marshal(map[string]any{"result": 1})
	if err := e.ns.UpdateWorkUnit(ctx, "first", "plain", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished, Data: none}); err != nil {
		t.Fatal(err)
	}
	if fast, fell := e.paths(); fast != 1 || fell != 0 {
		t.Errorf("no output: fast %d, fell through %d; want 1, 0", fast, fell)
	}
	// The spec stops chaining: output sent takes the fast path, chaining
	// nothing.
	e.spec(map[string]any{"name": "first"})
	raw, _ := cbor.Marshal(map[string]any{"output": []any{"from-unchained"}})
	if err := e.ns.UpdateWorkUnit(ctx, "first", "unchained", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished, Data: raw}); err != nil {
		t.Fatal(err)
	}
	if fast, fell := e.paths(); fast != 1 || fell != 0 {
		t.Errorf("output sent after the spec stopped chaining: fast %d, fell through %d; want 1, 0", fast, fell)
	}
	us, err := e.ns.ListWorkUnits(ctx, "second", coordinate.WorkUnitQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range us {
		got = append(got, u.Key.Bytes)
	}
	if fmt.Sprint(got) != "[from-sent from-stored]" {
		t.Errorf("second has %v, want [from-sent from-stored]", got)
	}
}

// TestFastFinishReleasesDependents: a fast finish resolves the edges to
// the unit in the same transaction.
func TestFastFinishReleasesDependents(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.spec(map[string]any{"name": "s"})
	e.add("s", unit("a", map[string]any{}))
	b := unit("b", map[string]any{})
	b.DependsOn = []coordinate.UnitRef{{Spec: "s", Key: "a"}}
	e.add("s", b)
	if st := e.status("s", "b"); st != coordinate.StatusBlocked {
		t.Fatalf("b is %v, want blocked", st)
	}
	as := e.claim("s", 1)
	e.paths()
	if err := e.ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "s", Key: as[0].Key.Bytes, ID: as[0].ID}, finish); err != nil {
		t.Fatal(err)
	}
	if fast, fell := e.paths(); fast != 1 || fell != 0 {
		t.Errorf("fast %d, fell through %d; want 1, 0", fast, fell)
	}
	if st := e.status("s", "b"); st != coordinate.StatusAvailable {
		t.Errorf("after a finished, b is %v, want available", st)
	}
	counts, err := e.ns.CountWorkUnits(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if counts[coordinate.StatusAvailable] != 1 || counts[coordinate.StatusFinished] != 1 || counts[coordinate.StatusBlocked] != 0 {
		t.Errorf("counts = %v, want 1 available, 1 finished", counts)
	}
}

// TestSameUnitTwiceInABatch: two updates of one unit in a batch both take
// the general path, in order.
func TestSameUnitTwiceInABatch(t *testing.T) {
	e := newFastEnv(t)
	e.spec(map[string]any{"name": "s"})
	e.add("s", unit("a", map[string]any{}))
	e.claim("s", 1)
	e.paths()
	nsImpl := e.ns.(*watchedNamespace).ns
	now := e.clock.Now()
	items := []*commitItem{
		{upd: &updateRequest{ns: nsImpl, spec: "s", key: "a", upd: finish, now: now}, done: make(chan error, 1)},
		{upd: &updateRequest{ns: nsImpl, spec: "s", key: "a", upd: coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable}, now: now}, done: make(chan error, 1)},
	}
	e.b.commits.apply(items)
	for i, it := range items {
		if err := <-it.done; err != nil {
			t.Errorf("update %d: %v", i, err)
		}
	}
	if fast, fell := e.paths(); fast != 0 || fell != 0 {
		t.Errorf("fast %d, fell through %d; want 0, 0 (both general)", fast, fell)
	}
	// Applied in order: finished, then made available again.
	if st := e.status("s", "a"); st != coordinate.StatusAvailable {
		t.Errorf("a is %v, want available", st)
	}
}
