// Package jobserver adapts a coordinate.Namespace to the legacy Python
// coordinate CBOR-RPC method set (PROTOCOL.md §8): it decodes each method's
// positional parameters, calls the backend, and shapes the result exactly as
// the Python daemon did (tuples, in-band (false, message) pairs, byte-string
// messages and map keys).
//
// A JobServer is a cborrpc.Handler. It holds no per-connection state and
// takes no lock of its own around backend calls, so concurrent connections
// run in parallel; only the optional lock service (§8.25) has a mutex.
package jobserver
