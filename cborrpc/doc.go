// Package cborrpc is the wire layer of coordinated: the CBOR-RPC framing of
// the legacy Python coordinate daemon (PROTOCOL.md §1–§5), a TCP server that
// reads requests from each connection strictly in order and hands them to a
// Handler, and a small synchronous/pipelining client used by tests and the
// load generator.
//
// Requests arrive as a stream of concatenated CBOR items: normally a tag-24
// byte string wrapping the request map, but bare maps, batches (arrays of
// requests) and a closing null are accepted too (DECISIONS §6). Each request
// is read into its own freshly allocated buffer; the raw CBOR slices in a
// Request alias that buffer and stay valid for as long as the handler keeps
// them, so handlers may store them without copying.
//
// Responses are maps with byte-string keys wrapped in tag 24 + byte string.
// Results are encoded deterministically (sorted map keys, minimal integer
// heads, float64 for every float, definite lengths); Tuple becomes tag 128.
// A handler may return a cbor.RawMessage it encoded itself; it is checked to
// be one well-formed item and copied verbatim.
//
// Client.CallRaw returns a result still encoded, for a caller (the load
// generator) that reads it with internal/cborx and so spends little CPU of
// its own. The CBOR mechanism itself (heads, walking, validation) is
// internal/cborx; this package holds the protocol's policy on top of it:
// the limits and allowed tags of limits.go and the byte budgets of the
// reader.
package cborrpc
