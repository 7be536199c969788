// Package coordinate is the bottom layer of coordinated: the interface every
// storage backend implements (namespaces, work specs, work units, workers,
// attempts), the types those operations exchange, the typed errors, and the
// pure rules shared by every backend (work-spec parsing, the scheduler,
// chaining, the update_work_unit state machine, lease clamping).
//
// Nothing here knows about the wire protocol or about a particular storage
// engine. Backends (memory, postgres) import this package; the RPC adapter
// (jobserver) and the daemon sit on top of it. Arrows point down only.
//
// Conventions:
//
//   - Work-spec names, work-unit keys and worker ids are arbitrary byte
//     sequences held in Go strings. Identity and ordering are bytewise.
//     Where a name is created, a Name also records whether it arrived as a
//     CBOR text string, so it can be echoed the way it came.
//   - User data (work-unit data, work-spec definitions, worker heartbeat
//     data, worker modes) is Data: exactly one encoded CBOR data item,
//     stored and returned byte for byte.
//   - All times come from a Clock supplied to the backend, so tests can
//     move time by hand.
package coordinate
