package postgres

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// statementCounter is a pgx tracer counting, while on, the statements
// the backend's connections run and their round trips: a statement sent
// alone is one, a batch one for all of its statements.
type statementCounter struct {
	mu         sync.Mutex
	on         bool
	statements []string // the first line of each
	roundTrips int
}

func (c *statementCounter) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on, c.statements, c.roundTrips = true, nil, 0
}

// stop ends the count and returns it.
func (c *statementCounter) stop() (statements []string, roundTrips int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	return c.statements, c.roundTrips
}

func (c *statementCounter) note(sql string, roundTrip bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on {
		return
	}
	if roundTrip {
		c.roundTrips++
	}
	if sql != "" {
		first, _, _ := strings.Cut(strings.TrimSpace(sql), "\n")
		c.statements = append(c.statements, first)
	}
}

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.note(d.SQL, true)
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.note("", true)
	return ctx
}

func (c *statementCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.note(d.SQL, false)
}

func (c *statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// Failing a unit with 2,400 dependents in three levels (addCascade), and
// retrying it, costs statements and round trips by the level, not by the
// unit: the cascade used to run four statements per dependent, each a
// round trip of its own.
func TestFailCascadeRoundTrips(t *testing.T) {
	counter := &statementCounter{}
	_, ns := openBackend(t, freshSchema(t), Options{tracer: counter, NoCacheKeeping: true})
	n := addCascade(t, ns)
	for _, step := range []struct {
		what   string
		status coordinate.Status
		counts map[coordinate.Status]int
	}{
		{"failing s/root", coordinate.StatusFailed, map[coordinate.Status]int{coordinate.StatusFailed: n + 1}},
		{"retrying s/root", coordinate.StatusAvailable, map[coordinate.Status]int{coordinate.StatusAvailable: 1, coordinate.StatusBlocked: n}},
	} {
		counter.start()
		err := ns.UpdateWorkUnit(t.Context(), "s", "root", statusUpdate(step.status))
		statements, roundTrips := counter.stop()
		if err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		t.Logf("%s: %d statements in %d round trips", step.what, len(statements), roundTrips)
		if len(statements) >= 30 || roundTrips >= 10 {
			t.Errorf("%s with %d dependents in three levels took %d statements in %d round trips, want fewer than 30 in fewer than 10:\n%s",
				step.what, n, len(statements), roundTrips, strings.Join(statements, "\n"))
		}
		counts, err := ns.CountWorkUnits(t.Context(), "s")
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(counts, step.counts) {
			t.Errorf("%s: counts %v, want %v", step.what, counts, step.counts)
		}
	}
}
