package cborrpc

import (
	"context"

	"github.com/fxamacker/cbor/v2"
)

// Request is one decoded CBOR-RPC request (PROTOCOL §3.1).
type Request struct {
	// ID is the request's `id` value exactly as received, echoed verbatim
	// in the response; nil when the request had no id (echoed as null).
	ID cbor.RawMessage
	// Method is the method name (sent as a byte or text string).
	Method string
	// Params holds the positional parameters, each one encoded CBOR item,
	// when `params` was an array (what every shipped client sends).
	Params []cbor.RawMessage
	// NamedParams holds keyword parameters when `params` was a map; keys
	// are the parameter names whether sent as byte or text strings.
	NamedParams map[string]cbor.RawMessage
}

// Handler executes requests. The server calls Handle for the requests of
// one connection strictly one after another, in order; different
// connections call it concurrently.
//
// The result is encoded with this package's encoder: Tuple becomes a tag-128
// array, []byte a byte string, string a text string, cbor.RawMessage is
// copied verbatim, and maps, slices, numbers, bools and nil as usual. A
// non-nil error becomes an error response whose message is err.Error().
type Handler interface {
	Handle(ctx context.Context, req *Request) (result any, err error)
}

// Tuple is a Python tuple: encoded as CBOR tag 128 around an array.
type Tuple []any
