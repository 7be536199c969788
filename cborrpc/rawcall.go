package cborrpc

import (
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// This file lets a client (the load generator) make calls without decoding
// results into generic Go values: CallRaw returns the result as its encoded
// item, which the caller inspects with SplitItem, ListElements and
// StringContent, the same validating readers the server parses requests
// with.

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
	if n, ok := uintItem(gotID); !ok || n != id {
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
	n, err := skipItem(payload, 0)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cborrpc: malformed response: %w", err)
	}
	h, err := readHead(payload)
	if err != nil || h.major != majorMap || n != len(payload) {
		return nil, nil, nil, errors.New("cborrpc: response is not one map")
	}
	kv, err := containerItems(payload[:n], h, 2)
	if err != nil {
		return nil, nil, nil, err
	}
	var errItem []byte
	for i := 0; i < len(kv); i += 2 {
		key, _ := stringValue(kv[i])
		switch key {
		case "id":
			id = kv[i+1]
		case "result":
			result = kv[i+1]
		case "error":
			errItem = kv[i+1]
		}
	}
	if errItem != nil {
		if eh, err := readHead(errItem); err == nil && eh.major == majorMap {
			if ekv, err := containerItems(errItem, eh, 2); err == nil {
				for i := 0; i < len(ekv); i += 2 {
					if key, _ := stringValue(ekv[i]); key == "message" {
						errMsg = ekv[i+1]
					}
				}
			}
		}
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

// uintItem reads an unsigned integer item.
func uintItem(b []byte) (uint64, bool) {
	h, err := readHead(b)
	if err != nil || h.major != majorUint {
		return 0, false
	}
	return h.arg, true
}

// SplitItem validates the first CBOR item of b and returns it and the
// bytes after it.
func SplitItem(b []byte) (item, rest []byte, err error) {
	n, err := skipItem(b, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("cborrpc: %w", err)
	}
	return b[:n:n], b[n:], nil
}

// ListElements returns the elements of an encoded array or tag-128 tuple
// (tuple reports which it was) as sub-slices of item.
func ListElements(item []byte) (elems []cbor.RawMessage, tuple bool, err error) {
	h, err := readHead(item)
	if err != nil {
		return nil, false, fmt.Errorf("cborrpc: %w", err)
	}
	if h.major == majorTag && h.arg == TagTuple {
		tuple = true
		item = item[h.size:]
		if h, err = readHead(item); err != nil {
			return nil, false, fmt.Errorf("cborrpc: %w", err)
		}
	}
	if h.major != majorArray {
		return nil, false, fmt.Errorf("cborrpc: item of major type %d is not a list", h.major)
	}
	elems, err = containerItems(item, h, 1)
	if err != nil {
		return nil, false, fmt.Errorf("cborrpc: %w", err)
	}
	return elems, tuple, nil
}

// StringContent returns the contents of a definite-length byte or text
// string item without copying; ok is false for any other item.
func StringContent(item []byte) (s []byte, ok bool) {
	return stringBytes(item)
}
