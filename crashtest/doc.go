// Package crashtest holds end-to-end crash tests of the daemon (docs/persistence.md):
// they build the real coordinated binary, drive adds, get_work and
// finishes through several CBOR-RPC connections, kill -9 the process at
// random moments, restart it on the same storage and check the state
// against what the clients saw acknowledged. The tests run against the
// memory backend (journal in a data directory) and the PostgreSQL backend
// (a fresh schema in COORDINATE_TEST_POSTGRES). The package has no
// non-test code.
package crashtest
