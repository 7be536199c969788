package cborrpc

import (
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/internal/cborx"
)

// This file lets a client (the load generator) make calls without decoding
// results into generic Go values: CallRaw returns the result as its encoded
// item, which the caller inspects with the readers of internal/cborx.

// CallRaw is Call returning the result undecoded: one well-formed CBOR
// item that stays valid after later calls. An error response is returned
// as *RPCError.
func (c *Client) CallRaw(method string, params ...any) (cbor.RawMessage, error) {
	id, err := c.Send(method, params...)
	if err != nil {
		return nil, err
	}
	if err := c.bw.Flush(); err != nil {
		return nil, err
	}
	frame, err := c.frames.next()
	if err != nil {
		return nil, fmt.Errorf("cborrpc: reading response: %w", err)
	}
	gotID, result, errMsg, err := splitResponse(frame)
	if err != nil {
		return nil, err
	}
	if n, ok := cborx.Uint(gotID); !ok || n != id {
		return nil, fmt.Errorf("cborrpc: response id % x does not match request id %d", []byte(gotID), id)
	}
	if errMsg != nil {
		msg, _ := stringValue(errMsg)
		return nil, &RPCError{Message: msg}
	}
	return result, nil
}

// splitResponse finds the id, result and error message items of a
// response payload (tag 24 already removed). errMsg is nil unless the
// response is an error whose message is a string.
func splitResponse(payload []byte) (id, result, errMsg cbor.RawMessage, err error) {
	n, err := validate(payload)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cborrpc: malformed response: %w", err)
	}
	var errItem cbor.RawMessage
	isMap := n == len(payload) && cborx.EachPair(payload, func(k, v []byte) {
		switch key, _ := stringValue(k); key {
		case "id":
			id = v
		case "result":
			result = v
		case "error":
			errItem = v
		}
	})
	if !isMap {
		return nil, nil, nil, errors.New("cborrpc: response is not one map")
	}
	if errItem != nil {
		cborx.EachPair(errItem, func(k, v []byte) {
			if key, _ := stringValue(k); key == "message" {
				errMsg = v
			}
		})
		if _, ok := stringValue(errMsg); !ok {
			return id, nil, nil, fmt.Errorf("cborrpc: error response without a message string: % x", []byte(errItem))
		}
		return id, nil, errMsg, nil
	}
	if result == nil {
		return id, nil, nil, errors.New("cborrpc: response has neither result nor error")
	}
	return id, result, nil, nil
}
