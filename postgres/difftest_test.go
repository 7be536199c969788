package postgres_test

// The differential test: the same seeded random operations applied to a
// memory backend and a PostgreSQL backend, on fake clocks moved together,
// with the two whole observable states compared after every operation.
// It lives here, in the postgres package's external tests, because a
// backend's tests may import the other backend (both are on floor 3,
// internal/archtest) while neither backend's code imports the other.
//
//	COORDINATE_DIFF_SEED=n    run only seed n (the seed a failure prints)
//	COORDINATE_DIFF_SEEDS=n   run seeds 1..n (a soak; default diffSeeds)
//	COORDINATE_DIFF_OPS=n     operations per seed (default diffOps)
//
// Compared after each operation: its result (attempts in order, counts)
// and error kind; every spec's definition, settings and counts; every
// unit's status, data, priority, worker, times, attempts, dependencies
// and group; group statuses and the stalled groups; workers; the child
// work units of the parents. Like every database test it needs
// COORDINATE_TEST_POSTGRES. Masks are only for the divergences
// docs/postgres.md lists under "Where it still differs from the memory
// backend"; each cites its line.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/pgtest"
	"github.com/coordinated/coordinated/memory"
	"github.com/coordinated/coordinated/postgres"
)

// The normal test command's budget: about 11 s under -race on 2 cores
// (about 2.2 s a seed).
const (
	diffSeeds = 5
	diffOps   = 200
)

var diffEpoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// The universe the operations draw from: small, so they collide often.
var (
	diffSpecs   = []string{"s0", "s1", "s2", "s3"}
	diffKeys    = []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
	diffWorkers = []string{"w0", "w1", "w2", "p0", "p1"}
	diffParents = []string{"p0", "p1"}
	diffGroups  = []string{"g0", "g1", "g2"}
)

// diffStallTimeout is short enough that clock advances cross it.
const diffStallTimeout = 10 * time.Minute

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

func TestDifferentialMemoryPostgres(t *testing.T) {
	url, _ := pgtest.FreshSchema(t, "diff")
	ops := envInt(t, "COORDINATE_DIFF_OPS", diffOps)
	var seeds []uint64
	if s := os.Getenv("COORDINATE_DIFF_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("COORDINATE_DIFF_SEED=%q: %v", s, err)
		}
		seeds = []uint64{n}
	} else {
		for i := range envInt(t, "COORDINATE_DIFF_SEEDS", diffSeeds) {
			seeds = append(seeds, uint64(i+1))
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runDiff(t, url, seed, ops)
		})
	}
}

// diffSide is one backend under test.
type diffSide struct {
	name  string
	ctx   context.Context
	clock *coordinate.FakeClock
	ns    coordinate.Namespace
	// attempts holds this side's lease ids by logical attempt (the index
	// shared by both sides: they hand out the same leases in the same
	// order, or the test has already failed).
	attempts []int64
}

// diffOp is one operation, run on each side in turn. Its result must be
// comparable with reflect.DeepEqual across the sides.
type diffOp struct {
	desc string
	run  func(s *diffSide) (any, error)
}

type diffRun struct {
	t     *testing.T
	seed  uint64
	rng   *rand.Rand
	sides [2]*diffSide
	log   []string
	// logical attempts: what each was (for descriptions).
	attempts []string
	// rootTaint: units whose tracebacks name different roots (maskRoot).
	rootTaint map[coordinate.UnitRef][2]string
	prev      *diffState
}

func runDiff(t *testing.T, url string, seed uint64, nops int) {
	ctx := t.Context()
	mc := coordinate.NewFakeClock(diffEpoch)
	pc := coordinate.NewFakeClock(diffEpoch)
	mb := memory.New(memory.Options{Clock: mc, StallTimeout: diffStallTimeout})
	t.Cleanup(func() { mb.Close() })
	pb, err := postgres.New(ctx, url, postgres.Options{Clock: pc, StallTimeout: diffStallTimeout, MaxConns: 4})
	if err != nil {
		t.Fatalf("postgres.New: %v", err)
	}
	t.Cleanup(func() { pb.Close() })
	nsName := fmt.Sprintf("diff-%d-%x", seed, time.Now().UnixNano())
	mns, err := mb.Namespace(ctx, nsName)
	if err != nil {
		t.Fatal(err)
	}
	pns, err := pb.Namespace(ctx, nsName)
	if err != nil {
		t.Fatal(err)
	}
	r := &diffRun{
		t:         t,
		seed:      seed,
		rng:       rand.New(rand.NewPCG(seed, 0x636f6f7264)),
		sides:     [2]*diffSide{{name: "memory", ctx: ctx, clock: mc, ns: mns}, {name: "postgres", ctx: ctx, clock: pc, ns: pns}},
		rootTaint: map[coordinate.UnitRef][2]string{},
	}
	r.prev = r.state(r.sides[0])
	for step := range nops {
		op := r.nextOp()
		r.log = append(r.log, fmt.Sprintf("%3d %s %s", step, mc.Now().Format("15:04:05"), op.desc))
		var res [2]any
		var errs [2]error
		for i, s := range r.sides {
			res[i], errs[i] = op.run(s)
		}
		r.compareResults(op, res, errs)
		r.compareStates()
	}
}

// fail reports a divergence with the seed and the operations so far
// (the last 60, or all when one seed is being reproduced).
func (r *diffRun) fail(format string, args ...any) {
	r.t.Helper()
	log := r.log
	if len(log) > 60 && os.Getenv("COORDINATE_DIFF_SEED") == "" {
		log = append([]string{fmt.Sprintf("... %d earlier operations", len(log)-60)}, log[len(log)-60:]...)
	}
	repro := fmt.Sprintf("COORDINATE_DIFF_SEED=%d", r.seed)
	if n := os.Getenv("COORDINATE_DIFF_OPS"); n != "" {
		repro += " COORDINATE_DIFF_OPS=" + n
	}
	r.t.Fatalf("seed %d (reproduce: %s go test -run TestDifferentialMemoryPostgres ./postgres), after\n%s\n%s",
		r.seed, repro, strings.Join(log, "\n"), fmt.Sprintf(format, args...))
}

var diffSentinels = []error{
	coordinate.ErrNoSuchWorkSpec, coordinate.ErrWorkSpecExists, coordinate.ErrNoSuchWorkUnit,
	coordinate.ErrNoSuchWorker, coordinate.ErrInvalidWorkSpec, coordinate.ErrInvalidWorkUnit,
	coordinate.ErrCannotBeContinuous, coordinate.ErrNothingToDo, coordinate.ErrLostLease,
	coordinate.ErrCycle,
}

// errKind names an error's sentinel; an error with none fails the test.
func (r *diffRun) errKind(side string, err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range diffSentinels {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	r.fail("%s: unexpected error %v", side, err)
	return ""
}

func (r *diffRun) compareResults(op diffOp, res [2]any, errs [2]error) {
	r.t.Helper()
	k0, k1 := r.errKind("memory", errs[0]), r.errKind("postgres", errs[1])
	if k0 != k1 {
		r.fail("error kinds differ: memory %v, postgres %v", errs[0], errs[1])
	}
	if !reflect.DeepEqual(res[0], res[1]) {
		r.fail("results differ:\nmemory   %+v\npostgres %+v", res[0], res[1])
	}
}

// ---- operations ----

func (r *diffRun) pick(xs []string) string { return xs[r.rng.IntN(len(xs))] }
func (r *diffRun) chance(p float64) bool   { return r.rng.Float64() < p }

// diffEnc encodes maps with sorted keys, so a seed makes the same bytes
// (and, for an output map, chains its units in the same order) every run.
var diffEnc, _ = cbor.EncOptions{Sort: cbor.SortBytewiseLexical}.EncMode()

func (r *diffRun) enc(v any) coordinate.Data {
	b, err := diffEnc.Marshal(v)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

func dtext(s string) coordinate.Name { return coordinate.Name{Bytes: s, Text: true} }

func (r *diffRun) nextOp() diffOp {
	type weighted struct {
		w  int
		op func() diffOp
	}
	table := []weighted{
		{6, r.opSetWorkSpec},
		{14, r.opAddWorkUnits},
		{14, r.opGetWork},
		{10, r.opUpdateAttempt},
		{8, r.opUpdateWorkUnit},
		{4, r.opRetry},
		{3, r.opPrioritize},
		{3, r.opDeleteUnits},
		{1, r.opDeleteSpec},
		{4, r.opHeartbeat},
		{1, r.opUnregister},
		{2, r.opCancelGroup},
		{1, r.opControl},
		{8, r.opAdvance},
	}
	total := 0
	for _, w := range table {
		total += w.w
	}
	n := r.rng.IntN(total)
	for _, w := range table {
		if n < w.w {
			return w.op()
		}
		n -= w.w
	}
	panic("unreachable")
}

func (r *diffRun) opSetWorkSpec() diffOp {
	name := r.pick(diffSpecs)
	def := map[string]any{"name": name}
	if r.chance(0.3) {
		def["weight"] = 1 + r.rng.IntN(3)
	} else if r.chance(0.2) {
		def["nice"] = r.rng.IntN(20)
	}
	if r.chance(0.3) {
		def["priority"] = r.rng.IntN(3)
	}
	if r.chance(0.25) {
		def["max_running"] = r.rng.IntN(3) // 0 runs none at a time
	}
	if r.chance(0.25) {
		def["max_getwork"] = 1 + r.rng.IntN(2)
	}
	if r.chance(0.3) {
		def["max_retries"] = 1 + r.rng.IntN(2)
	}
	if r.chance(0.4) {
		// A spec may chain into itself; see outputFor for the one
		// documented divergence that avoids.
		def["then"] = r.pick(diffSpecs)
		if r.chance(0.3) {
			def["then_preempts"] = false
		}
	}
	if r.chance(0.05) {
		def["disabled"] = true
	}
	if r.chance(0.1) {
		def["continuous"] = false
	}
	data := r.enc(def)
	return diffOp{fmt.Sprintf("set_work_spec %v", def), func(s *diffSide) (any, error) {
		ws, err := s.ns.SetWorkSpec(s.ctx, data)
		if err != nil {
			return nil, err
		}
		return *ws, nil
	}}
}

// unitInput makes one add_work_units item.
func (r *diffRun) unitInput(spec string) coordinate.WorkUnitInput {
	in := coordinate.WorkUnitInput{Key: dtext(r.pick(diffKeys)), Data: r.enc(map[string]any{"v": r.rng.IntN(100)})}
	if r.chance(0.5) {
		p := float64(r.rng.IntN(5) - 1)
		in.Priority = &p
	}
	if r.chance(0.15) {
		in.Delay = time.Duration(1+r.rng.IntN(90)) * time.Second
	}
	if r.chance(0.3) {
		for range 1 + r.rng.IntN(2) {
			dep := coordinate.UnitRef{Spec: spec, Key: r.pick(diffKeys)}
			if r.chance(0.4) {
				dep.Spec = r.pick(diffSpecs)
			}
			in.DependsOn = append(in.DependsOn, dep)
		}
	}
	if r.chance(0.35) {
		in.Group = r.pick(diffGroups)
	}
	return in
}

func (r *diffRun) opAddWorkUnits() diffOp {
	spec := r.pick(diffSpecs)
	var ins []coordinate.WorkUnitInput
	for range 1 + r.rng.IntN(4) {
		ins = append(ins, r.unitInput(spec))
	}
	var descs []string
	for _, in := range ins {
		descs = append(descs, describeInput(in))
	}
	return diffOp{fmt.Sprintf("add_work_units %s [%s]", spec, strings.Join(descs, " ")), func(s *diffSide) (any, error) {
		return nil, s.ns.AddWorkUnits(s.ctx, spec, ins)
	}}
}

func describeInput(in coordinate.WorkUnitInput) string {
	desc := []string{in.Key.Bytes}
	if in.Priority != nil {
		desc = append(desc, fmt.Sprintf("prio=%v", *in.Priority))
	}
	if in.Delay > 0 {
		desc = append(desc, fmt.Sprintf("delay=%v", in.Delay))
	}
	for _, d := range in.DependsOn {
		desc = append(desc, fmt.Sprintf("dep=%s/%s", d.Spec, d.Key))
	}
	if in.Group != "" {
		desc = append(desc, "group="+in.Group)
	}
	return strings.Join(desc, ",")
}

// unit is a unit as the state before this operation has it, or nil.
func (r *diffRun) unit(spec, key string) *coordinate.WorkUnit {
	for i, u := range r.prev.Units[spec] {
		if u.Key.Bytes == key {
			return &r.prev.Units[spec][i]
		}
	}
	return nil
}

// downstream reports whether unit x waits, directly or through others,
// on unit k (by the dependencies the state before this operation shows).
func (r *diffRun) downstream(x, k coordinate.UnitRef) bool {
	seen := map[coordinate.UnitRef]bool{}
	var walk func(u coordinate.UnitRef) bool
	walk = func(u coordinate.UnitRef) bool {
		if seen[u] {
			return false
		}
		seen[u] = true
		wu := r.unit(u.Spec, u.Key)
		if wu == nil {
			return false
		}
		for _, d := range wu.DependsOn {
			if d == k || walk(d) {
				return true
			}
		}
		return false
	}
	return walk(x)
}

// attemptView is an Attempt without its backend-specific id.
type attemptView struct {
	Spec, Key coordinate.Name
	Data      string
	Priority  float64
	Worker    coordinate.Name
	Expires   time.Time
}

func (r *diffRun) opGetWork() diffOp {
	req := coordinate.WorkRequest{
		Worker:    dtext(r.pick(diffWorkers)),
		LeaseTime: []time.Duration{30 * time.Second, 60 * time.Second, 300 * time.Second}[r.rng.IntN(3)],
		MaxJobs:   1 + r.rng.IntN(4),
	}
	if r.chance(0.3) {
		for _, s := range diffSpecs {
			if r.chance(0.5) {
				req.WorkSpecs = append(req.WorkSpecs, s)
			}
		}
	}
	first := true
	return diffOp{fmt.Sprintf("get_work worker=%s lease=%v max_jobs=%d specs=%v", req.Worker.Bytes, req.LeaseTime, req.MaxJobs, req.WorkSpecs),
		func(s *diffSide) (any, error) {
			as, err := s.ns.GetWork(s.ctx, req)
			var out []attemptView
			for _, a := range as {
				out = append(out, attemptView{a.Spec, a.Key, string(a.Data), a.Priority, a.Worker, a.Expires})
				s.attempts = append(s.attempts, a.ID)
				if first {
					r.attempts = append(r.attempts, fmt.Sprintf("%s/%s@%s", a.Spec.Bytes, a.Key.Bytes, a.Worker.Bytes))
				}
			}
			first = false
			return out, err
		}}
}

// outputFor makes the data of a finish: sometimes with an `output` that
// chains into the spec's `then`.
func (r *diffRun) outputFor(spec, key string) (coordinate.Data, string) {
	if r.chance(0.3) {
		return nil, "keep data"
	}
	if r.chance(0.3) {
		return r.enc(map[string]any{"done": r.rng.IntN(10)}), "data without output"
	}
	then := ""
	for _, ws := range r.prev.Specs {
		if ws.Name.Bytes == spec {
			then = ws.Meta.Then
		}
	}
	// docs/postgres.md, "Where it still differs": "Finishing a FAILED unit
	// whose output re-adds it (a spec whose `then` is itself) leaves its
	// dependents waiting for the re-added unit." An output never names
	// the finishing unit itself when its spec chains into itself.
	var ins []coordinate.WorkUnitInput
	for _, k := range diffKeys {
		if (k != key || then != spec) && r.chance(0.25) {
			ins = append(ins, coordinate.WorkUnitInput{Key: dtext(k), Data: r.enc(map[string]any{"from": key})})
		}
	}
	if len(ins) == 0 {
		ins = append(ins, coordinate.WorkUnitInput{Key: dtext(diffKeys[(slices.Index(diffKeys, key)+1)%len(diffKeys)]), Data: r.enc(map[string]any{"from": key})})
	}
	asMap := r.chance(0.5)
	if !asMap {
		for i := range ins {
			if r.chance(0.3) {
				ins[i].DependsOn = []coordinate.UnitRef{{Spec: r.pick(diffSpecs), Key: r.pick(diffKeys)}}
			}
		}
	}
	var out any
	if asMap {
		m := map[string]any{}
		for _, in := range ins {
			m[in.Key.Bytes] = map[string]any{"from": key}
		}
		out = m
	} else {
		var l []any
		for _, in := range ins {
			k := in.Key.Bytes
			switch {
			case len(in.DependsOn) > 0 || r.chance(0.4):
				meta := map[string]any{}
				if r.chance(0.5) {
					meta["priority"] = r.rng.IntN(4)
				}
				if r.chance(0.3) {
					meta["delay"] = 10
				}
				if r.chance(0.3) {
					meta["group"] = r.pick(diffGroups)
				}
				if len(in.DependsOn) > 0 {
					meta["depends_on"] = []any{[]any{in.DependsOn[0].Spec, in.DependsOn[0].Key}}
				}
				l = append(l, []any{k, map[string]any{"from": key}, meta})
			case r.chance(0.5):
				l = append(l, k)
			default:
				l = append(l, []any{k, map[string]any{"from": key}})
			}
		}
		out = l
	}
	v := map[string]any{"output": out}
	return r.enc(v), fmt.Sprintf("output=%v", out)
}

// update makes a random update_work_unit.
func (r *diffRun) update(spec, key string) (coordinate.WorkUnitUpdate, string) {
	dur := func(d time.Duration) *time.Duration { return &d }
	switch r.rng.IntN(8) {
	case 0, 1:
		data, d := r.outputFor(spec, key)
		return coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished, Data: data}, "finish " + d
	case 2:
		u := coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed}
		if r.chance(0.5) {
			u.Data = r.enc(map[string]any{"traceback": "boom"})
		}
		return u, "fail"
	case 3:
		return coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable}, "give back (status 1)"
	case 4:
		return coordinate.WorkUnitUpdate{LeaseTime: dur(-time.Second)}, "give back (lease -1)"
	case 5:
		d := time.Duration(30+r.rng.IntN(300)) * time.Second
		return coordinate.WorkUnitUpdate{LeaseTime: &d}, fmt.Sprintf("renew %v", d)
	case 6:
		d := time.Duration(30+r.rng.IntN(300)) * time.Second
		u := coordinate.WorkUnitUpdate{Status: coordinate.StatusPending, LeaseTime: &d}
		desc := fmt.Sprintf("pending lease=%v", d)
		if r.chance(0.5) {
			w := dtext(r.pick(diffWorkers))
			u.Worker = &w
			desc += " worker=" + w.Bytes
		}
		return u, desc
	default:
		u := coordinate.WorkUnitUpdate{Status: coordinate.Status(1 + r.rng.IntN(5))}
		if r.chance(0.5) {
			u.Data = r.enc(map[string]any{"set": r.rng.IntN(10)})
		}
		return u, fmt.Sprintf("status %v", u.Status)
	}
}

func (r *diffRun) opUpdateAttempt() diffOp {
	if len(r.attempts) == 0 {
		return r.opGetWork()
	}
	// Mostly recent attempts, sometimes stale ones.
	i := len(r.attempts) - 1 - r.rng.IntN(min(len(r.attempts), 6))
	if r.chance(0.15) {
		i = r.rng.IntN(len(r.attempts))
	}
	desc := r.attempts[i]
	spec, key, _ := strings.Cut(strings.Split(desc, "@")[0], "/")
	upd, d := r.update(spec, key)
	return diffOp{fmt.Sprintf("update_attempt #%d %s: %s", i, desc, d), func(s *diffSide) (any, error) {
		return nil, s.ns.UpdateAttempt(s.ctx, coordinate.AttemptRef{Spec: spec, Key: key, ID: s.attempts[i]}, upd)
	}}
}

func (r *diffRun) opUpdateWorkUnit() diffOp {
	spec, key := r.pick(diffSpecs), r.pick(diffKeys)
	upd, d := r.update(spec, key)
	return diffOp{fmt.Sprintf("update_work_unit %s/%s: %s", spec, key, d), func(s *diffSide) (any, error) {
		return nil, s.ns.UpdateWorkUnit(s.ctx, spec, key, upd)
	}}
}

func (r *diffRun) someKeys() []string {
	var keys []string
	for range 1 + r.rng.IntN(4) {
		keys = append(keys, r.pick(diffKeys))
	}
	return keys
}

func (r *diffRun) opRetry() diffOp {
	spec, keys := r.pick(diffSpecs), r.someKeys()
	// docs/postgres.md, "Where it still differs from the memory backend":
	// "`RetryWorkUnits` of a unit and its dependent retried at once counts
	// both here, one there (the final states agree)." The count is not
	// compared when the keys hold a FAILED unit and a FAILED unit waiting
	// on it; the states still are.
	countMasked := false
	for _, x := range keys {
		for _, k := range keys {
			xu, ku := r.unit(spec, x), r.unit(spec, k)
			if x != k && xu != nil && ku != nil && xu.Status == coordinate.StatusFailed && ku.Status == coordinate.StatusFailed &&
				r.downstream(coordinate.UnitRef{Spec: spec, Key: x}, coordinate.UnitRef{Spec: spec, Key: k}) {
				countMasked = true
			}
		}
	}
	desc := fmt.Sprintf("retry %s %v", spec, keys)
	if countMasked {
		desc += " (count not compared)"
	}
	return diffOp{desc, func(s *diffSide) (any, error) {
		n, err := s.ns.RetryWorkUnits(s.ctx, spec, keys)
		if countMasked {
			return nil, err
		}
		return n, err
	}}
}

func (r *diffRun) opPrioritize() diffOp {
	spec, keys := r.pick(diffSpecs), r.someKeys()
	var prio *float64
	adj := 0.0
	if r.chance(0.5) {
		p := float64(r.rng.IntN(5) - 1)
		prio = &p
	} else {
		adj = float64(r.rng.IntN(5) - 2)
	}
	return diffOp{fmt.Sprintf("prioritize %s %v set=%v adjust=%v", spec, keys, fmtPtr(prio), adj), func(s *diffSide) (any, error) {
		n, err := s.ns.PrioritizeWorkUnits(s.ctx, spec, keys, prio, adj)
		return n, err
	}}
}

func fmtPtr[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func (r *diffRun) opDeleteUnits() diffOp {
	spec := r.pick(diffSpecs)
	var q coordinate.DeleteQuery
	switch r.rng.IntN(4) {
	case 0:
		q.Keys = r.someKeys()
	case 1:
		q.Statuses = []coordinate.Status{coordinate.Status(1 + r.rng.IntN(5))}
	case 2:
		q.Keys = r.someKeys()
		q.Statuses = []coordinate.Status{coordinate.Status(1 + r.rng.IntN(5)), coordinate.Status(1 + r.rng.IntN(5))}
	default:
		q.All = r.chance(0.5)
	}
	return diffOp{fmt.Sprintf("delete_work_units %s %+v", spec, q), func(s *diffSide) (any, error) {
		return s.ns.DeleteWorkUnits(s.ctx, spec, q)
	}}
}

func (r *diffRun) opDeleteSpec() diffOp {
	spec := r.pick(diffSpecs)
	return diffOp{"delete_work_spec " + spec, func(s *diffSide) (any, error) {
		return nil, s.ns.DeleteWorkSpec(s.ctx, spec)
	}}
}

func (r *diffRun) opHeartbeat() diffOp {
	hb := coordinate.Heartbeat{
		Worker: dtext(r.pick(diffWorkers)),
		Mode:   r.enc([]string{"run", "idle"}[r.rng.IntN(2)]),
		Data:   r.enc(map[string]any{"n": r.rng.IntN(10)}),
		Expire: []time.Duration{60 * time.Second, 600 * time.Second}[r.rng.IntN(2)],
	}
	if r.chance(0.2) {
		hb.Data = r.enc(map[string]any{coordinate.ReleaseLeasesKey: true})
	}
	if !slices.Contains(diffParents, hb.Worker.Bytes) && r.chance(0.7) {
		p := dtext(r.pick(diffParents))
		hb.Parent = &p
	}
	return diffOp{fmt.Sprintf("heartbeat %s parent=%v expire=%v data=%x", hb.Worker.Bytes, fmtPtr(hb.Parent), hb.Expire, []byte(hb.Data)),
		func(s *diffSide) (any, error) { return nil, s.ns.WorkerHeartbeat(s.ctx, hb) }}
}

func (r *diffRun) opUnregister() diffOp {
	w := r.pick(diffWorkers)
	return diffOp{"unregister " + w, func(s *diffSide) (any, error) { return nil, s.ns.UnregisterWorker(s.ctx, w) }}
}

func (r *diffRun) opCancelGroup() diffOp {
	g := r.pick(diffGroups)
	return diffOp{"cancel_group " + g, func(s *diffSide) (any, error) { return s.ns.CancelGroup(s.ctx, g) }}
}

func (r *diffRun) opControl() diffOp {
	spec := r.pick(diffSpecs)
	paused := r.chance(0.5)
	c := coordinate.WorkSpecControl{Paused: &paused}
	desc := fmt.Sprintf("control %s paused=%v", spec, paused)
	if r.chance(0.3) {
		mr := r.rng.IntN(3)
		c.MaxRunning = &mr
		desc += fmt.Sprintf(" max_running=%d", mr)
	}
	return diffOp{desc, func(s *diffSide) (any, error) { return nil, s.ns.ControlWorkSpec(s.ctx, spec, c) }}
}

func (r *diffRun) opAdvance() diffOp {
	d := []time.Duration{time.Second, 5 * time.Second, 31 * time.Second, 61 * time.Second, 301 * time.Second, 11 * time.Minute}[r.rng.IntN(6)]
	return diffOp{fmt.Sprintf("advance %v", d), func(s *diffSide) (any, error) {
		s.clock.Add(d)
		return nil, nil
	}}
}

// ---- observable state ----

// diffState is everything the test compares after each operation.
type diffState struct {
	Specs    []coordinate.WorkSpec
	Counts   map[string]map[coordinate.Status]int
	Units    map[string][]coordinate.WorkUnit // by spec, in key order
	Groups   map[string]coordinate.GroupStatus
	Stalled  []coordinate.GroupStatus
	Workers  []coordinate.WorkerInfo
	Children map[string][]coordinate.ChildWorker
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func normCounts(c map[coordinate.Status]int) map[coordinate.Status]int {
	if len(c) == 0 {
		return nil
	}
	return c
}

func (r *diffRun) must(s *diffSide, what string, err error) {
	r.t.Helper()
	if err != nil {
		r.fail("%s: %s: %v", s.name, what, err)
	}
}

func (r *diffRun) state(s *diffSide) *diffState {
	r.t.Helper()
	st := &diffState{
		Counts:   map[string]map[coordinate.Status]int{},
		Units:    map[string][]coordinate.WorkUnit{},
		Groups:   map[string]coordinate.GroupStatus{},
		Children: map[string][]coordinate.ChildWorker{},
	}
	specs, _, err := s.ns.ListWorkSpecs(s.ctx, "", 0)
	r.must(s, "ListWorkSpecs", err)
	for _, ws := range specs {
		ws.Meta.NextContinuous = utc(ws.Meta.NextContinuous)
		st.Specs = append(st.Specs, *ws)
		name := ws.Name.Bytes
		c, err := s.ns.CountWorkUnits(s.ctx, name)
		r.must(s, "CountWorkUnits "+name, err)
		st.Counts[name] = normCounts(c)
		us, err := s.ns.ListWorkUnits(s.ctx, name, coordinate.WorkUnitQuery{})
		r.must(s, "ListWorkUnits "+name, err)
		for _, u := range us {
			u.Expiration, u.NotBefore = utc(u.Expiration), utc(u.NotBefore)
			slices.SortFunc(u.DependsOn, func(a, b coordinate.UnitRef) int {
				return strings.Compare(a.Spec+"\x00"+a.Key, b.Spec+"\x00"+b.Key)
			})
			if len(u.DependsOn) == 0 {
				u.DependsOn = nil
			}
			st.Units[name] = append(st.Units[name], *u)
		}
	}
	for _, g := range diffGroups {
		gs, err := s.ns.GroupStatus(s.ctx, g)
		r.must(s, "GroupStatus "+g, err)
		gs.Counts, gs.LastProgress = normCounts(gs.Counts), utc(gs.LastProgress)
		st.Groups[g] = *gs
	}
	stalled, err := s.ns.StalledGroups(s.ctx)
	r.must(s, "StalledGroups", err)
	for _, gs := range stalled {
		gs.Counts, gs.LastProgress = normCounts(gs.Counts), utc(gs.LastProgress)
		st.Stalled = append(st.Stalled, *gs)
	}
	ws, err := s.ns.Workers(s.ctx)
	r.must(s, "Workers", err)
	for _, w := range ws {
		w.LastHeard, w.Expires = utc(w.LastHeard), utc(w.Expires)
		st.Workers = append(st.Workers, *w)
	}
	for _, p := range diffParents {
		cs, err := s.ns.ChildWorkUnits(s.ctx, p)
		r.must(s, "ChildWorkUnits "+p, err)
		for i := range cs {
			if len(cs[i].Units) == 0 {
				cs[i].Units = nil
			}
			for j := range cs[i].Units {
				cs[i].Units[j].Expires = utc(cs[i].Units[j].Expires)
			}
		}
		if len(cs) > 0 {
			st.Children[p] = cs
		}
	}
	return st
}

func (r *diffRun) compareStates() {
	r.t.Helper()
	m, p := r.state(r.sides[0]), r.state(r.sides[1])
	var diffs []string
	differ := func(what string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			diffs = append(diffs, fmt.Sprintf("%s:\n  memory   %+v\n  postgres %+v", what, a, b))
		}
	}
	differ("specs", m.Specs, p.Specs)
	differ("counts", m.Counts, p.Counts)
	for _, spec := range diffSpecs {
		mu, pu := m.Units[spec], p.Units[spec]
		if len(mu) != len(pu) {
			differ("units of "+spec, mu, pu)
			continue
		}
		for i := range mu {
			pv := r.maskRoot(spec, mu[i], pu[i])
			differ(fmt.Sprintf("unit %s/%s", spec, mu[i].Key.Bytes), mu[i], pv)
		}
	}

	for _, g := range diffGroups {
		differ("group "+g, m.Groups[g], p.Groups[g])
	}
	differ("stalled groups", m.Stalled, p.Stalled)

	differ("workers", m.Workers, p.Workers)
	differ("child work units", m.Children, p.Children)
	if len(diffs) > 0 {
		r.fail("states differ:\n%s", strings.Join(diffs, "\n"))
	}
	r.prev = m
}

// traceback returns the text of data's "traceback" entry, if any.
func traceback(d coordinate.Data) (string, bool) {
	var v map[any]any
	if cbor.Unmarshal(d, &v) != nil {
		return "", false
	}
	tb, ok := v["traceback"].(string)
	return tb, ok
}

// maskRoot returns the PostgreSQL side's unit pu, with the memory side's
// traceback when the two differ only in the root of a dependency failure
// they name and both are roots of it. docs/postgres.md, "Where it still
// differs from the memory backend": "The traceback naming the root of a
// failure reached through two paths may name either". A unit keeps the
// mask while it keeps those two tracebacks.
func (r *diffRun) maskRoot(spec string, mu, pu coordinate.WorkUnit) coordinate.WorkUnit {
	self := coordinate.UnitRef{Spec: spec, Key: mu.Key.Bytes}
	if bytes.Equal(mu.Data, pu.Data) {
		delete(r.rootTaint, self)
		return pu
	}
	mtb, ok1 := traceback(mu.Data)
	ptb, ok2 := traceback(pu.Data)
	if !ok1 || !ok2 || !bytes.Equal(coordinate.WithTraceback(pu.Data, mtb), mu.Data) {
		return pu
	}
	pair := [2]string{mtb, ptb}
	if r.rootTaint[self] != pair {
		// New here: the unit must have failed, and both must name a unit
		// it waited on, directly or through others, before this
		// operation. (A retry then keeps the traceback, and the mask.)
		if mu.Status != coordinate.StatusFailed || pu.Status != coordinate.StatusFailed {
			return pu
		}
		for _, tb := range pair {
			ref, ok := strings.CutPrefix(tb, "dependency ")
			ref, ok2 := strings.CutSuffix(ref, " failed")
			sp, key, ok3 := strings.Cut(ref, "/")
			if !ok || !ok2 || !ok3 || !r.downstream(self, coordinate.UnitRef{Spec: sp, Key: key}) {
				return pu
			}
		}
		r.rootTaint[self] = pair
	}
	pu.Data = mu.Data
	return pu
}
