// Package memory is the in-memory coordinate.Backend: every namespace's work
// specs, work units, leases, workers, dependencies and groups live in Go
// data structures guarded by one mutex per namespace. It is the default
// backend of the daemon and the reference the conformance suite is written
// against.
//
// New returns a volatile backend. Open returns one that keeps its state in
// a data directory through the write-ahead journal (package journal):
// every committed op is encoded as a record (record.go) and appended under
// the namespace lock, and the method waits for it to be durable after
// unlocking (namespace.end) before answering. GetWork alone answers
// without waiting (namespace.endLease): its records (the leases, the
// continuous units created for them, the expiries applied first) may be
// lost in a crash, which only makes the units AVAILABLE again (or, for a
// continuous unit, absent) to be handed out anew; any later change that
// waits, such as the worker's finish, makes them durable first because
// the journal is written in order. Snapshots (snapshot.go, restore.go) compact
// the journal in the background; Open replays snapshot and journal
// (persist.go). docs/persistence.md describes the guarantees and costs.
//
// # Layout
//
// Each spec keeps its units in a map by key plus three indexed heaps: the
// available units in hand-out order (priority descending, key ascending),
// the delayed units by not-before time, and the pending units by lease
// expiry, and, once a listing by key needed it, a B-tree of its units in
// key order (keyindex.go). Counts per status are maintained incrementally.
// Every hot-path operation (add, get work, update/finish/fail/renew, count)
// is O(log n) per unit touched and O(number of specs) for the scheduler. A
// listing reads O(log n + page) by key; one that must read more (a status
// filter matching few units, a priority listing of completed units) lets
// go of the namespace lock every few thousand units (listing.go). Deletes
// by status, archive and whole-spec deletion still visit all units of a
// spec under the lock (docs/architecture.md, "Listing units without
// stalling the namespace").
//
// Everything a method returns is a copy, and everything it stores is
// copied from the caller's arguments, so callers may keep or reuse buffers.
//
// Leases expire lazily: before a namespace method reads or changes state,
// expired leases, due delayed units and expired worker records are popped
// from their heaps (an opExpire).
//
// # The operation rule
//
// Every state change goes through one place: a mutating method validates
// its request against the current state (read-only), builds an operation
// record (the op* types in ops.go) and hands it to namespace.commit, which
// applies it to the state. An op carries everything needed to apply it again
// identically: the time it happened (Now, as Unix nanoseconds), the chosen
// spec and unit keys, generated continuous keys and the first lease id.
// Applying an op never reads the clock, never fails for a reason the
// validation could have caught, and depends only on the op and the state.
// Replaying the committed ops, in order, on an empty state rebuilds the same
// state (see replay_test.go). Op fields are plain exported values so a
// write-ahead journal can serialise them; results for the caller live in
// unexported fields.
package memory
