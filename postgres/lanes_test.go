package postgres

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// queuesClaimsOnly reports whether a first round trip lets its
// transaction commit without waiting for the WAL flush.
func queuesClaimsOnly(b *pgx.Batch) bool {
	for _, q := range b.QueuedQueries {
		if q.SQL == claimsOnly || q.SQL == implicitClaimsOnly {
			return true
		}
	}
	return false
}

// TestOnlyLeasesSkipTheFlush: a transaction of claims alone commits
// without waiting for its WAL flush (leases may be lost in a crash,
// docs/spec/PERSISTENCE.md section 3); any transaction holding an update
// waits for it, and the committer runs a mixed batch's claims and updates
// as transactions of their own.
func TestOnlyLeasesSkipTheFlush(t *testing.T) {
	b := &Backend{cache: noKeeper{}}
	ns := &namespace{b: b, id: 1}
	now := time.Unix(1000, 0)
	claim := func() *commitItem {
		return &commitItem{claim: &claimRequest{ns: ns, spec: specRow{id: 2}, n: 1,
			worker: coordinate.Name{Bytes: "w", Text: true}, now: now, expires: now.Add(time.Minute)}}
	}
	finish := func(key string) *commitItem {
		return &commitItem{upd: &updateRequest{ns: ns, spec: "s", key: key, now: now,
			upd: coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}}}
	}
	general := &commitItem{upd: &updateRequest{ns: ns, spec: "s", key: "c", now: now,
		upd: coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed}}}
	batch := []*commitItem{claim(), finish("a"), claim(), finish("b"), general}

	first := func(items []*commitItem) *pgx.Batch {
		return planBatch(items, make([]error, len(items))).queueFirstTrip(b)
	}
	if queuesClaimsOnly(first(batch)) {
		t.Error("a transaction with updates commits without waiting for its flush")
	}
	if queuesClaimsOnly(first([]*commitItem{general})) {
		t.Error("a general-path update commits without waiting for its flush")
	}
	claims, updates := splitLanes(batch)
	if len(claims) != 2 || len(updates) != 3 {
		t.Fatalf("splitLanes: %d claims and %d updates, want 2 and 3", len(claims), len(updates))
	}
	for _, it := range claims {
		if it.upd != nil {
			t.Error("an update in the claims' lane")
		}
	}
	for _, it := range updates {
		if it.upd == nil {
			t.Error("a claim in the updates' lane")
		}
	}
	if !queuesClaimsOnly(first(claims)) {
		t.Error("a transaction of claims alone waits for its WAL flush")
	}
	// get_work requests go with the claims and begin their transaction
	// in stage 0 (schedclaims.go).
	get := &commitItem{get: &getRequest{ns: ns, now: now, expires: now.Add(time.Minute),
		req: coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}}}}
	claims, updates = splitLanes(append(batch, get))
	if len(claims) != 3 || len(updates) != 3 {
		t.Fatalf("splitLanes with a get_work: %d claims and %d updates, want 3 and 3", len(claims), len(updates))
	}
	p := planBatch(claims, make([]error, len(claims)))
	if sched, _ := p.queueSchedule(newSchedReads(p.gets)); !queuesClaimsOnly(sched) {
		t.Error("a transaction of get_work requests waits for its WAL flush")
	}
	p = planBatch(append(updates, get), make([]error, len(updates)+1))
	if sched, _ := p.queueSchedule(newSchedReads(p.gets)); queuesClaimsOnly(sched) {
		t.Error("a transaction of get_work requests and updates commits without waiting for its flush")
	}
	if queuesClaimsOnly(first(updates)) {
		t.Error("the updates' lane commits without waiting for its flush")
	}
}
