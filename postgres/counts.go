package postgres

import (
	"context"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// countKey names one unit_count cell.
type countKey struct {
	spec   int64
	status coordinate.Status
}

// countDelta accumulates the changes to unit_count made by one
// transaction, and the unit transitions they are (for the daemon's
// counters, events.go, once the transaction has committed). A copy shares
// the maps: make one with newCountDelta.
type countDelta struct {
	cells  map[countKey]int64
	events specEvents
}

func newCountDelta() countDelta {
	return countDelta{cells: map[countKey]int64{}, events: specEvents{}}
}

// move records that one unit of spec went from status from to status to
// (0 = did not exist / no longer exists).
func (d countDelta) move(spec int64, from, to coordinate.Status) {
	d.transition(spec, from, to, false)
}

// expire is move for a lease lapsing (from is PENDING).
func (d countDelta) expire(spec int64, from, to coordinate.Status) {
	d.transition(spec, from, to, true)
}

func (d countDelta) transition(spec int64, from, to coordinate.Status, expiry bool) {
	if from == to {
		return
	}
	d.events.note(spec, from, to, expiry)
	if from != 0 {
		d.cells[countKey{spec, from}]--
	}
	if to != 0 {
		d.cells[countKey{spec, to}]++
	}
}

// apply writes the deltas into this connection's slot of each cell, in a
// fixed order so concurrent transactions lock counter rows in the same
// order.
func (d countDelta) apply(ctx context.Context, tx dbtx) error {
	sql, args := d.statement()
	if sql == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("postgres unit counts: %w", err)
	}
	return nil
}

// queue is apply as part of a pipelined batch.
func (d countDelta) queue(b *pgx.Batch) {
	if sql, args := d.statement(); sql != "" {
		b.Queue(sql, args...)
	}
}

// statement is the call that applies d ("" when there is nothing to do):
// unit_count_add (migration 0008) with the cells in (spec, status) order.
func (d countDelta) statement() (string, []any) {
	keys := make([]countKey, 0, len(d.cells))
	for k, n := range d.cells {
		if n != 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "", nil
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].spec != keys[j].spec {
			return keys[i].spec < keys[j].spec
		}
		return keys[i].status < keys[j].status
	})
	specs := make([]int64, len(keys))
	statuses := make([]int16, len(keys))
	ns := make([]int64, len(keys))
	for i, k := range keys {
		specs[i], statuses[i], ns[i] = k.spec, int16(k.status), d.cells[k]
	}
	return "SELECT unit_count_add($1, $2, $3)", []any{specs, statuses, ns}
}
