// Package jobserver adapts a coordinate.Namespace to the legacy Python
// coordinate CBOR-RPC method set (PROTOCOL.md §8): it decodes each method's
// positional parameters, calls the backend, and shapes the result exactly as
// the Python daemon did (tuples, in-band (false, message) pairs, byte-string
// messages and map keys).
//
// A JobServer is a cborrpc.Handler. It holds no per-connection state and
// takes no lock of its own around backend calls, so concurrent connections
// run in parallel; only the optional lock service (§8.25) has a mutex.
//
// The worker hot path (get_work, update_work_unit, add_work_units) avoids
// generic CBOR decoding: parameters are read in place by the small walker
// of cborread.go, with the fxamacker decoder only as the fallback for
// unusual encodings, and those methods' results are written straight to
// CBOR bytes (results.go) instead of trees of interface values.
package jobserver
