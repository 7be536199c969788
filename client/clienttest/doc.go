// Package clienttest holds the client package's tests against real
// daemons: ours on both backends (internal/testdaemon) and the Python
// daemon. They live here, a floor above client, because the daemons they
// start are built from packages on client's own floor
// (docs/architecture.md).
package clienttest
