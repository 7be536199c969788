// Package postgres is the PostgreSQL storage backend of coordinated: a
// coordinate.Backend whose state lives in one database shared by any number
// of daemons, with exactly the memory backend's behaviour (the conformance
// suite in coordinate/coordinatetest runs against both).
//
// Design (issue 4):
//
//   - The schema is created and upgraded by embedded migrations
//     (migrations/*.sql) under a PostgreSQL advisory lock, so several
//     daemons may start at once.
//   - Every time comes from the backend's coordinate.Clock and is passed to
//     the queries; the database's now() is never used. Times are stored as
//     bigint nanoseconds since the Unix epoch.
//   - Unit counts per spec and status are kept in unit_count rows updated in
//     the same transactions as the units, so counting and scheduling never
//     scan units.
//   - get_work chooses a spec with coordinate.ChooseWorkSpec from those
//     counts, then claims units with one UPDATE over a FOR UPDATE SKIP
//     LOCKED subselect: concurrent daemons never hand out a unit twice and
//     never wait for each other.
//   - update_work_unit calls from all connections are group-committed: a
//     single goroutine gathers the updates that arrive while the previous
//     batch commits and applies them in one transaction, computing each
//     transition in Go (coordinate.ApplyUpdate) so one bad item never fails
//     the others.
//   - Expired leases are swept by any daemon with FOR UPDATE SKIP LOCKED.
package postgres
