package postgres

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coordinated/coordinated/coordinate"
)

// getItems makes n get_work requests of one unit each from spec for
// worker names w0, w1, ..., as the committer receives them.
func (e *fastEnv) getItems(spec string, n int) []*commitItem {
	nsImpl := e.ns.(*watchedNamespace).ns
	now := e.clock.Now()
	var items []*commitItem
	for i := range n {
		req := coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w" + string(rune('0'+i)), Text: true},
			WorkSpecs: []string{spec}, MaxJobs: 1, LeaseTime: time.Minute}
		items = append(items, &commitItem{get: &getRequest{ns: nsImpl, req: req, now: now, expires: now.Add(time.Minute)},
			done: make(chan error, 1)})
	}
	return items
}

// TestGetWorksShareABatch: get_work requests that queue while the
// committer is busy go into one batch, each gets units of its own, and
// PostgreSQL's own record says their leases were written by one statement
// of one transaction (every leased row has the same xmin and cmin).
func TestGetWorksShareABatch(t *testing.T) {
	e := newFastEnv(t)
	ctx := t.Context()
	e.spec(map[string]any{"name": "s"})
	e.add("s", numbered(10)...)
	c := e.b.commits
	// Hold every pooled connection, so the batch a committer worker takes
	// first (the plug, an update) waits for one while the get_work
	// requests queue behind it and the other worker gathers them.
	var held []*pgxpool.Conn
	release := func() {
		for _, conn := range held {
			conn.Release()
		}
		held = nil
	}
	defer release()
	for range e.b.pool.Config().MaxConns {
		conn, err := e.b.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, conn)
	}
	nsImpl := e.ns.(*watchedNamespace).ns
	plug := &commitItem{upd: &updateRequest{ns: nsImpl, spec: "s", key: "none", upd: finish, now: e.clock.Now()},
		done: make(chan error, 1)}
	c.enqueue(plug)
	waitFor(t, "a committer worker to take the plug", func() bool { return c.busy.Load() == 1 })
	items := e.getItems("s", 3)
	for _, it := range items {
		c.enqueue(it)
	}
	waitFor(t, "the other worker to gather the get_work requests", func() bool { return len(c.queue) == 0 })
	release()
	<-plug.done // no such unit: its error does not matter here
	seen := map[string]bool{}
	for i, it := range items {
		if err := <-it.done; err != nil {
			t.Fatalf("get_work %d: %v", i, err)
		}
		g := it.get
		if g.claim == nil || len(g.claim.attempts) != 1 || g.alone || g.continuous != nil {
			t.Fatalf("get_work %d: claim %+v, alone %v", i, g.claim, g.alone)
		}
		k := g.claim.attempts[0].Key.Bytes
		if seen[k] {
			t.Errorf("unit %s handed out twice", k)
		}
		seen[k] = true
	}
	rows, err := e.b.pool.Query(ctx, "SELECT DISTINCT xmin::text || '/' || cmin::text FROM work_unit WHERE status = 3")
	if err != nil {
		t.Fatal(err)
	}
	writers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(writers) != 1 {
		t.Errorf("the 3 leases were written by %d (transaction, statement) pairs, want 1", len(writers))
	}
	counts, err := e.ns.CountWorkUnits(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if counts[coordinate.StatusPending] != 3 || counts[coordinate.StatusAvailable] != 7 {
		t.Errorf("counts %v, want 3 pending, 7 available", counts)
	}
}

// TestGetWorksMaxRunningReadAlone: requests sharing a read that choose a
// spec with max_running claim nothing in the batch (they would all count
// the same pending units); GetWork then reads alone, and max_running
// holds.
func TestGetWorksMaxRunningReadAlone(t *testing.T) {
	e := newFastEnv(t)
	e.spec(map[string]any{"name": "s", "max_running": 1})
	e.add("s", numbered(10)...)
	items := e.getItems("s", 2)
	e.b.commits.apply(items)
	for i, it := range items {
		if err := <-it.done; err != nil {
			t.Fatalf("get_work %d: %v", i, err)
		}
		if !it.get.alone || it.get.claim != nil {
			t.Errorf("get_work %d: alone %v, claim %+v; want alone, no claim", i, it.get.alone, it.get.claim)
		}
	}
	as := e.claim("s", 1)
	w := coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "x", Text: true}, MaxJobs: 1, LeaseTime: time.Minute}
	more, err := e.ns.GetWork(t.Context(), w)
	if err != nil || len(more) != 0 {
		t.Errorf("GetWork past max_running 1 with %s held: %v, %v; want nothing", as[0].Key.Bytes, more, err)
	}
}

// TestAbandonedGetWorkLeasesNothing: a get_work whose caller gave up
// before its batch ran leases no unit.
func TestAbandonedGetWorkLeasesNothing(t *testing.T) {
	e := newFastEnv(t)
	e.spec(map[string]any{"name": "s"})
	e.add("s", numbered(3)...)
	items := e.getItems("s", 2)
	items[0].state.Store(itemAbandoned)
	e.b.commits.apply(items)
	if err := <-items[1].done; err != nil || items[1].get.claim == nil || len(items[1].get.claim.attempts) != 1 {
		t.Fatalf("the waiting get_work: %v", err)
	}
	if items[0].get.claim != nil {
		t.Errorf("the abandoned get_work claimed %+v", items[0].get.claim)
	}
	counts, err := e.ns.CountWorkUnits(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if counts[coordinate.StatusPending] != 1 {
		t.Errorf("counts %v, want 1 pending", counts)
	}
}

// TestChooseWithReusesBuffer: requests sharing a read build their views
// in one buffer in turn (chooseWith), and each sees the candidates as of
// its own time: a continuous spec ready for one request is not for
// another that arrived before its next unit was due.
func TestChooseWithReusesBuffer(t *testing.T) {
	ns := &namespace{b: &Backend{}}
	due := time.Unix(1000, 0)
	row := &specRow{id: 1, spec: coordinate.WorkSpec{Name: coordinate.Name{Bytes: "c", Text: true},
		Meta: coordinate.WorkSpecMeta{Weight: 1, Continuous: true, CanBeContinuous: true, NextContinuous: due}}}
	cands := []candidate{{row: row, chooseable: true}}
	req := coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}}
	sc, i, ok := ns.chooseWith(nil, cands, req, due.Add(time.Second))
	if !ok || i != 0 || !sc[0].ContinuousReady {
		t.Fatalf("after the due time: chose %d, %v, view %+v; want the continuous spec", i, ok, sc[0])
	}
	sc2, _, ok := ns.chooseWith(sc, cands, req, due.Add(-time.Second))
	if ok || sc2[0].ContinuousReady {
		t.Errorf("before the due time, in the same buffer: chose %v, view %+v; want nothing", ok, sc2[0])
	}
	if &sc2[0] != &sc[0] {
		t.Errorf("the second view was not built in the buffer")
	}
}
