package cachekeep

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/pgtest"
)

// The part of the backend's work_unit table the machinery reads: these
// columns, and the available-units index it reads keys from
// (TestFixtureMatchesSchema checks the index against the migrations).
const (
	fixtureTable = `CREATE TABLE work_unit (
    spec_id  bigint   NOT NULL,
    key      bytea    NOT NULL,
    data     bytea    NOT NULL,
    status   smallint NOT NULL,
    priority float8   NOT NULL DEFAULT 0,
    PRIMARY KEY (spec_id, key)
)`
	fixtureIndex = `CREATE INDEX work_unit_available ON work_unit (spec_id, priority DESC, key) WHERE status = 1;`
)

// env is a Keeper over a work_unit table of a test's own schema, which
// the test fills and claims from the way the backend does, telling the
// Keeper what it did.
type env struct {
	t     *testing.T
	k     *Keeper
	pool  *pgxpool.Pool
	clock *coordinate.FakeClock
}

// newEnv returns an env whose Keeper has cfg (its pool, clock and logger
// replaced).
func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	url, _ := pgtest.FreshSchema(t, "cachekeep")
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for _, stmt := range []string{fixtureTable, fixtureIndex} {
		if _, err := pool.Exec(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	clock := coordinate.NewFakeClock(time.Unix(1_700_000_000, 0))
	cfg.Pool, cfg.Clock, cfg.Logger = pool, clock, slog.Default()
	k := New(cfg)
	t.Cleanup(k.Close)
	return &env{t: t, k: k, pool: pool, clock: clock}
}

// unit is a unit to add.
type unit struct {
	key      string
	priority float64
}

// numbered returns n units with keys u00000, u00001, ... and priority 0.
func numbered(n int) []unit {
	us := make([]unit, n)
	for i := range us {
		us[i].key = fmt.Sprintf("u%05d", i)
	}
	return us
}

// add adds available units to spec and tells the Keeper.
func (e *env) add(spec int64, us ...unit) {
	e.t.Helper()
	keys := make([][]byte, len(us))
	prios := make([]float64, len(us))
	for i, u := range us {
		keys[i], prios[i] = []byte(u.key), u.priority
	}
	if _, err := e.pool.Exec(e.t.Context(), `INSERT INTO work_unit (spec_id, key, data, status, priority)
		SELECT $1, k, '\xa0'::bytea, 1, p FROM unnest($2::bytea[], $3::float8[]) AS u(k, p)`,
		spec, keys, prios); err != nil {
		e.t.Fatal(err)
	}
	e.k.Added(spec, len(us))
}

// claim leases the n best available units of spec, telling the Keeper
// before and after as the backend does.
func (e *env) claim(spec int64, n int) {
	e.t.Helper()
	e.k.Claiming(spec, n)
	rows, err := e.pool.Query(e.t.Context(), `UPDATE work_unit SET status = 3
		WHERE (spec_id, key) IN (SELECT spec_id, key FROM work_unit WHERE spec_id = $1 AND status = 1
			ORDER BY priority DESC, key LIMIT $2)
		RETURNING priority, key`, spec, n)
	if err != nil {
		e.t.Fatal(err)
	}
	var got int
	var last, p Pos
	for rows.Next() {
		if err := rows.Scan(&p.Priority, &p.Key); err != nil {
			e.t.Fatal(err)
		}
		if got == 0 || p.After(last) {
			last = p
		}
		got++
	}
	if err := rows.Err(); err != nil || got != n {
		e.t.Fatalf("claim(%d, %d) = %d units, %v", spec, n, got, err)
	}
	e.k.Claimed(spec, n, last)
	e.k.Committed(n)
}

// waitFor polls cond until it holds (or fails the test after 5 s).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestFixtureMatchesSchema: the available-units index the fixture builds
// is the backend's (created by its migrations, never dropped since).
func TestFixtureMatchesSchema(t *testing.T) {
	files, err := filepath.Glob("../migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations found: %v", err)
	}
	created, dropped := false, false
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		created = created || strings.Contains(string(b), fixtureIndex)
		dropped = dropped || strings.Contains(string(b), "DROP INDEX work_unit_available;")
	}
	if !created || dropped {
		t.Fatalf("the migrations do not leave %q as it is (created %v, dropped %v)", fixtureIndex, created, dropped)
	}
}
