// Package client is a Go client for any daemon that speaks the legacy
// coordinate CBOR-RPC protocol: ours, the Python coordinated, go-coordinate.
// It reads the same YAML client configuration as the Python client
// (coordinate.address / addresses, retries, base_retry_seconds,
// default_lifetime), keeps one connection per Client with the Python
// client's reconnect-and-retry policy, and offers a typed method for every
// legacy RPC. Requests are encoded by cborrpc exactly as the Python 2
// client encodes them: byte-string method, option keys and names, tuples
// as tag 128.
//
// The `coordinate` CLI (cmd/coordinate) and `coordinated migrate` are
// built on it.
package client
