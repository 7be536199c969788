// Package postgres is the PostgreSQL storage backend of coordinated: a
// coordinate.Backend whose state lives in one database shared by any number
// of daemons, with exactly the memory backend's behaviour (the conformance
// suite in coordinate/coordinatetest runs against both).
//
// Design:
//   - The schema is created and upgraded by embedded migrations
//     (migrations/*.sql) under a PostgreSQL advisory lock, so several
//     daemons may start at once; applied versions are in schema_migrations.
//   - Every time comes from the backend's coordinate.Clock and is passed to
//     the queries; the database's now() is never used. Times are stored as
//     bigint nanoseconds since the Unix epoch.
//   - Unit counts per spec and status are kept in unit_count rows updated in
//     the same transactions as the units (each connection writes its own
//     slot row), so counting and scheduling never scan units.
//   - get_work reads the candidate specs' counts and best priorities,
//     chooses with coordinate.ChooseWorkSpec and claims in one committer
//     transaction (the read shared by the calls of a batch that name the
//     same specs, schedclaims.go); it claims units with
//     an UPDATE over a FOR UPDATE SKIP LOCKED subselect (queries/claim.sql):
//     concurrent daemons never hand out a unit twice and never wait for
//     each other.
//   - The committer (committer.go) group-commits the hot writes of every
//     connection: claims and update_work_unit calls queued while a
//     transaction runs share the next one, so one WAL flush answers many
//     requests; with nothing in flight a batch waits briefly for as many
//     requests as recent batches held, whose callers are sending their
//     next ones (gather). Its transactions use generic plans (planned
//     once per connection). A batch's transaction reads top to bottom in
//     pipeline.go (plan, fast statements, lock and compute, side effects,
//     commit). Finishing a held unit is one conditional UPDATE for the
//     whole batch (finish.go); other updates, and finishes that statement
//     does not match, are computed in Go with coordinate.ApplyUpdate from
//     rows locked FOR UPDATE, so one bad item never fails the others.
//   - SQL lives in files: every statement of the hot batch in queries/,
//     one per file; the rest in sql/*.sql as named statements
//     (sqlfiles.go).
//   - A unit's primary key is (spec_id, key). Units of equal priority are
//     leased in key order, so the index entries each new row version adds
//     land next to each other even with millions of units queued
//     (migration 0006 replaced a surrogate id, in order of adding, whose
//     index took them on random pages).
//   - Each daemon VACUUMs work_unit after every 100,000 units it claims
//     (cachekeep/vacuum.go): dead entries at the front of the available
//     units' index would otherwise slow every claim until autovacuum comes
//     round. That, ANALYZE after bulk loads, read-ahead of claims and head
//     warming are the cache machinery, package cachekeep, which the
//     request paths tell what happened through cacheKeeper
//     (cachekeeper.go; Options.NoCacheKeeping turns it off).
//   - Expired leases are swept by any daemon with FOR UPDATE SKIP LOCKED
//     (queries/sweep.sql), at most every 100 ms on the system clock and
//     whenever a test clock moves; updates also expire a locked unit's
//     lease themselves.
//   - Chained units are added in the finishing transaction; a finish through
//     UpdateAttempt compares the lease id, so a stale lease gets
//     coordinate.ErrLostLease.
//   - Dependencies (unit_dep edges) and groups (work_unit.grp, unit_group)
//     implement docs/dependencies.md (deps.go, groups.go).
//   - max_running holds exactly with any number of daemons (maxrunning.go):
//     a claim on a spec with max_running set takes that spec's transaction
//     advisory lock and caps itself at max_running minus the pending units
//     it reads after the lock. Claims on other specs take no lock.
//   - The lock service's locks are rows of lock_path (locks.go), shared by
//     every daemon on the database.
//   - A stalled database fails calls with coordinate.ErrUnavailable within
//     about Options.RequestTimeout instead of hanging them (liveness.go),
//     while long work on a database that answers runs to its end; the
//     backend's Ready answers the same question for /readyz.
//   - The unit transition counters of Stats (events.go) are this process's:
//     each daemon counts what its own transactions committed.
//
// Known limit: a claim sized from a spec read before control_work_spec set
// max_running (from 0) in the same instant is not gated.
package postgres
