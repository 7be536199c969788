package postgres

import "github.com/jackc/pgx/v5"

// noJIT turns PostgreSQL's JIT compilation off for the daemon's sessions,
// unless the URL sets `jit` itself.
//
// Every statement here touches a handful of rows, but the committer runs
// them as generic plans, and a generic plan's LIMIT $n is costed as a
// tenth of the table: at ten million queued units the claim's estimate
// passes jit_above_cost (100,000 by default), and each claim then spent
// about 18 ms compiling 53 functions for a statement that runs in 0.2 ms
// (EXPLAIN ANALYZE of queries/claim.sql, force_generic_plan, 10M units:
// 33.7 ms with JIT, 0.8 ms without). At 10,000 units the estimate stays
// below the threshold, which is why only deep queues were slow.
func noJIT(cfg *pgx.ConnConfig) {
	if _, set := cfg.RuntimeParams["jit"]; !set {
		cfg.RuntimeParams["jit"] = "off"
	}
}
