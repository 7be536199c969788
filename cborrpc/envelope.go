package cborrpc

import (
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/internal/cborx"
)

// Envelope keys, encoded as the byte strings the Python daemon used.
var (
	keyID      = []byte{0x42, 'i', 'd'}
	keyMethod  = []byte{0x46, 'm', 'e', 't', 'h', 'o', 'd'}
	keyParams  = []byte{0x46, 'p', 'a', 'r', 'a', 'm', 's'}
	keyResult  = []byte{0x46, 'r', 'e', 's', 'u', 'l', 't'}
	keyError   = []byte{0x45, 'e', 'r', 'r', 'o', 'r'}
	keyMessage = []byte{0x47, 'm', 'e', 's', 's', 'a', 'g', 'e'}
)

// appendID appends the echoed id: the raw bytes received, or null.
func appendID(dst []byte, id cbor.RawMessage) []byte {
	dst = append(dst, keyID...)
	if len(id) == 0 {
		return append(dst, 0xF6)
	}
	return append(dst, id...)
}

// appendResult appends `{b'id': id, b'result': result}` (PROTOCOL §3.2).
func appendResult(dst []byte, id cbor.RawMessage, result any) ([]byte, error) {
	dst = append(dst, 0xA2)
	dst = appendID(dst, id)
	dst = append(dst, keyResult...)
	return appendValue(dst, result)
}

// appendError appends `{b'id': id, b'error': {b'message': msg}}` with msg
// as a byte string (PROTOCOL §3.3).
func appendError(dst []byte, id cbor.RawMessage, msg string) []byte {
	dst = append(dst, 0xA2)
	dst = appendID(dst, id)
	dst = append(dst, keyError...)
	dst = append(dst, 0xA1)
	dst = append(dst, keyMessage...)
	dst = cborx.AppendHead(dst, cborx.MajorBytes, uint64(len(msg)))
	return append(dst, msg...)
}

// appendWrapped appends tag 24 + byte string around payload.
func appendWrapped(dst, payload []byte) []byte {
	dst = append(dst, 0xD8, 24)
	dst = cborx.AppendHead(dst, cborx.MajorBytes, uint64(len(payload)))
	return append(dst, payload...)
}

// EncodeRequest encodes one request frame the way the Python client does:
// a map with byte-string keys `id`, `method`, `params` (in that order), the
// method as a byte string, params as a plain array, all wrapped in tag 24.
// Params and id are encoded like results (string → text, []byte → bytes,
// Tuple → tag 128, cbor.RawMessage verbatim).
func EncodeRequest(id any, method string, params ...any) ([]byte, error) {
	payload, err := appendRequest(nil, id, method, params)
	if err != nil {
		return nil, err
	}
	return appendWrapped(make([]byte, 0, len(payload)+11), payload), nil
}

func appendRequest(dst []byte, id any, method string, params []any) ([]byte, error) {
	dst = append(dst, 0xA3)
	dst = append(dst, keyID...)
	dst, err := appendValue(dst, id)
	if err != nil {
		return nil, fmt.Errorf("cborrpc: request id: %w", err)
	}
	dst = append(dst, keyMethod...)
	dst = cborx.AppendHead(dst, cborx.MajorBytes, uint64(len(method)))
	dst = append(dst, method...)
	dst = append(dst, keyParams...)
	if dst, err = appendArray(dst, params); err != nil {
		return nil, fmt.Errorf("cborrpc: params of %s: %w", method, err)
	}
	return dst, nil
}

// RPCError is an error response from the server (PROTOCOL §3.3).
type RPCError struct{ Message string }

func (e *RPCError) Error() string { return "cborrpc: server error: " + e.Message }

// DecodeResponse decodes one response frame (tag-24 wrapped or bare) into
// its id, result and error message. errMsg is non-empty only for an error
// response; err reports a frame that is not a valid response. Values are
// decoded with DecMode (byte strings as []byte, tag 128 as Tuple, maps as
// map[any]any with cbor.ByteString keys for byte-string keys).
func DecodeResponse(frame []byte) (id any, result any, errMsg string, err error) {
	payload, err := unwrapTag24(frame)
	if err != nil {
		return nil, nil, "", err
	}
	var m map[any]cbor.RawMessage
	if err := modes.dec.Unmarshal(payload, &m); err != nil {
		return nil, nil, "", fmt.Errorf("cborrpc: response is not a map: %w", err)
	}
	raw := make(map[string]cbor.RawMessage, len(m))
	for k, v := range m {
		switch k := k.(type) {
		case string:
			raw[k] = v
		case cbor.ByteString:
			raw[string(k)] = v
		}
	}
	if rid, ok := raw["id"]; ok {
		if err := modes.dec.Unmarshal(rid, &id); err != nil {
			return nil, nil, "", fmt.Errorf("cborrpc: response id: %w", err)
		}
	}
	if rerr, ok := raw["error"]; ok {
		var e map[any]any
		if err := modes.dec.Unmarshal(rerr, &e); err != nil {
			return id, nil, "", fmt.Errorf("cborrpc: response error: %w", err)
		}
		msg := e[cbor.ByteString("message")]
		if msg == nil {
			msg = e["message"]
		}
		switch msg := msg.(type) {
		case []byte:
			errMsg = string(msg)
		case string:
			errMsg = msg
		}
		if errMsg == "" {
			errMsg = fmt.Sprintf("%v", e)
		}
		return id, nil, errMsg, nil
	}
	rres, ok := raw["result"]
	if !ok {
		return id, nil, "", errors.New("cborrpc: response has neither result nor error")
	}
	if err := modes.dec.Unmarshal(rres, &result); err != nil {
		return id, nil, "", fmt.Errorf("cborrpc: response result: %w", err)
	}
	return id, result, "", nil
}
