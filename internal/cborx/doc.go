// Package cborx is the one hand-written CBOR mechanism of coordinated
// (RFC 8949): item heads, the shortest head encoding, validating and
// measuring items, walking arrays and maps, and reading the scalar shapes
// the protocol uses, all on encoded bytes and without building generic Go
// values. It exists because reading requests and user data this way is
// several times faster than generic decoding on the daemon's hot paths.
//
// It holds mechanism only. What a request may contain (nesting and size
// limits, which tags are allowed, byte budgets) is protocol policy and
// lives in cborrpc, which passes it in as Limits. The package imports
// nothing of this module, so every floor may use it.
package cborx
