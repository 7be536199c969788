package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/coordinated/coordinated/coordinate"
)

// TestFinishTripIsItsTransaction: a batch of fast finishes or of claims
// alone is one round trip without BEGIN and COMMIT, its settings made by
// implicitSettings; a batch the general path or stage 0 continues keeps
// its explicit transaction.
func TestFinishTripIsItsTransaction(t *testing.T) {
	b := &Backend{cache: noKeeper{}}
	ns := &namespace{b: b, id: 1}
	now := time.Unix(1000, 0)
	finish := func(key string) *commitItem {
		return &commitItem{upd: &updateRequest{ns: ns, spec: "s", key: key, now: now,
			upd: coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}}}
	}
	claim := &commitItem{claim: &claimRequest{ns: ns, spec: specRow{id: 2}, n: 1,
		worker: coordinate.Name{Bytes: "w", Text: true}, now: now, expires: now.Add(time.Minute)}}
	general := &commitItem{upd: &updateRequest{ns: ns, spec: "s", key: "c", now: now,
		upd: coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed}}}
	sqls := func(items ...*commitItem) []string {
		p := planBatch(items, make([]error, len(items)))
		var out []string
		for _, q := range p.queueFirstTrip(b).QueuedQueries {
			out = append(out, q.SQL)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		items []*commitItem
		first string
	}{
		{"finishes", []*commitItem{finish("a"), finish("b")}, implicitGenericPlans},
		{"claims", []*commitItem{claim}, implicitClaimsOnly},
	} {
		got := sqls(tc.items...)
		if got[0] != tc.first {
			t.Errorf("%s: the round trip starts with %q, want %q", tc.name, got[0], tc.first)
		}
		for _, sql := range got {
			if sql == "BEGIN" || sql == "COMMIT" || strings.HasPrefix(sql, "SET LOCAL") {
				t.Errorf("%s: the implicit transaction sends %q", tc.name, sql)
			}
		}
	}
	got := sqls(finish("a"), general)
	if got[0] != "BEGIN" || got[1] != genericPlans {
		t.Errorf("a batch with a general-path update starts with %q, want BEGIN and %q", got[:2], genericPlans)
	}
}

// TestImplicitSettingsHold: implicitSettings's statement makes its
// settings for the rest of the pipeline's implicit transaction, silently
// (SET LOCAL there warns on every batch), and only for it; a statement
// that fails after it rolls back what the statements before it did, so
// a round trip without BEGIN and COMMIT is still all or nothing.
func TestImplicitSettingsHold(t *testing.T) {
	ctx := t.Context()
	cfg, err := pgx.ParseConfig(freshSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	var notices []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Severity+": "+n.Message) }
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const show = "SELECT current_setting('plan_cache_mode'), current_setting('synchronous_commit')"
	var mode0, sync0 string
	if err := conn.QueryRow(ctx, show).Scan(&mode0, &sync0); err != nil {
		t.Fatal(err)
	}
	for _, claimsOnly := range []bool{false, true} {
		b := &pgx.Batch{}
		b.Queue(implicitSettings(claimsOnly))
		var mode, sync string
		b.Queue(show).QueryRow(func(r pgx.Row) error { return r.Scan(&mode, &sync) })
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			t.Fatal(err)
		}
		wantSync := "on"
		if claimsOnly {
			wantSync = "off"
		}
		if mode != "force_generic_plan" || sync != wantSync {
			t.Errorf("claims only %v: plan_cache_mode %q and synchronous_commit %q in the transaction, want force_generic_plan and %s",
				claimsOnly, mode, sync, wantSync)
		}
		if err := conn.QueryRow(ctx, show).Scan(&mode, &sync); err != nil {
			t.Fatal(err)
		}
		if mode != mode0 || sync != sync0 {
			t.Errorf("claims only %v: the settings outlived the transaction: %q, %q (were %q, %q)", claimsOnly, mode, sync, mode0, sync0)
		}
	}
	if len(notices) > 0 {
		t.Errorf("the settings sent notices: %q", notices)
	}

	if _, err := conn.Exec(ctx, "CREATE TABLE implicit_probe (n integer)"); err != nil {
		t.Fatal(err)
	}
	b := &pgx.Batch{}
	b.Queue(implicitSettings(false))
	b.Queue("INSERT INTO implicit_probe VALUES (1)")
	b.Queue("SELECT 1 / (SELECT count(*) - 1 FROM implicit_probe)") // fails after the insert
	if err := conn.SendBatch(ctx, b).Close(); err == nil {
		t.Fatal("the failing statement did not fail")
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM implicit_probe").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a round trip that failed committed its earlier statements: %d rows", n)
	}
}
