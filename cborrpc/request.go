package cborrpc

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// call is one parsed request ready to run: either a request (with reqErr
// set when the envelope itself is unusable and the handler must not run)
// or a batch of calls.
type call struct {
	req    Request
	reqErr string
	batch  []call // non-nil for a batch (may be empty)
}

// parseTop parses one top-level item (tag-24 envelope already removed).
// closeConn is true for a top-level null or undefined: close without reply.
func parseTop(item []byte) (c call, closeConn bool, err error) {
	if len(item) == 0 {
		return call{}, false, malformed("empty tag-24 envelope")
	}
	n, err := skipItem(item, 0)
	if err != nil {
		return call{}, false, err
	}
	if n != len(item) {
		return call{}, false, malformed("%d bytes after the request item", len(item)-n)
	}
	if item[0] == 0xF6 || item[0] == 0xF7 {
		return call{}, true, nil
	}
	c, err = parseCall(item, 0)
	return c, false, err
}

// parseCall parses a validated item that must be a request map, a tag-24
// wrapped request, or a batch array of those.
func parseCall(item []byte, depth int) (call, error) {
	if depth > MaxNestingDepth {
		return call{}, malformed("batch nested deeper than %d levels", MaxNestingDepth)
	}
	h, err := readHead(item)
	if err != nil {
		return call{}, err
	}
	switch h.major {
	case majorTag:
		if h.arg != 24 {
			return call{}, malformed("tag %d where a request was expected", h.arg)
		}
		inner, err := unwrapTag24(item)
		if err != nil {
			return call{}, err
		}
		n, err := skipItem(inner, 0)
		if err != nil {
			return call{}, err
		}
		if n != len(inner) {
			return call{}, malformed("%d bytes after a tag-24 wrapped request", len(inner)-n)
		}
		return parseCall(inner, depth+1)
	case majorArray:
		elems := validatedItems(item, h, 1)
		batch := make([]call, len(elems))
		for i, e := range elems {
			if batch[i], err = parseCall(e, depth+1); err != nil {
				return call{}, err
			}
		}
		return call{batch: batch}, nil
	case majorMap:
		return parseRequest(item, h)
	}
	return call{}, malformed("top-level item of major type %d is not a request", h.major)
}

// parseRequest reads the envelope of a validated request map (PROTOCOL
// §3.1). Keys may be byte or text strings; other keys are ignored.
func parseRequest(item []byte, h head) (call, error) {
	var c call
	var method, params []byte
	pos := h.size
	for i := 0; h.info == infoIndefinite || i < int(h.arg); i++ {
		if h.info == infoIndefinite && item[pos] == breakByte {
			break
		}
		kn := validatedLen(item[pos:])
		key := item[pos : pos+kn]
		pos += kn
		vn := validatedLen(item[pos:])
		val := item[pos : pos+vn : pos+vn]
		pos += vn
		switch envelopeKey(key) {
		case "id":
			c.req.ID = cbor.RawMessage(val)
		case "method":
			method = val
		case "params":
			params = val
		}
	}
	if method == nil {
		c.reqErr = "KeyError('method',)\nrequest has no method\n"
		return c, nil
	}
	name, ok := stringBytes(method)
	if !ok {
		s, ok := stringValue(method)
		if !ok {
			c.reqErr = "TypeError('method name must be a string',)\n"
			return c, nil
		}
		name = []byte(s)
	}
	c.req.Method = internMethod(name)
	if params != nil {
		c.reqErr = parseParams(&c.req, params)
	}
	return c, nil
}

// envelopeKey returns the envelope key a map key item names, or "".
func envelopeKey(key []byte) string {
	b, ok := stringBytes(key)
	if !ok {
		s, ok := stringValue(key) // indefinite-length key: rare
		if !ok {
			return ""
		}
		b = []byte(s)
	}
	switch string(b) {
	case "id":
		return "id"
	case "method":
		return "method"
	case "params":
		return "params"
	}
	return ""
}

// methodNames holds the method names of PROTOCOL §7–§8 so that parsing a
// request does not allocate a string for them. It is never modified.
var methodNames = func() map[string]string {
	m := make(map[string]string)
	for _, n := range []string{
		"set_work_spec", "get_work_spec", "list_work_specs", "control_work_spec",
		"get_work_spec_meta", "clear", "del_work_spec", "archive", "add_work_units",
		"count_work_units", "get_work_units", "prioritize_work_units", "del_work_units",
		"get_work_unit_status", "update_work_unit", "get_work", "get_child_work_units",
		"worker_heartbeat", "worker_unregister", "list_worker_modes", "get_worker_info",
		"mode_counts", "worker_stats", "get_config", "now", "lock", "locksome", "renew",
		"readlock", "unlock", "delete_namespace",
	} {
		m[n] = n
	}
	return m
}()

func internMethod(b []byte) string {
	if s, ok := methodNames[string(b)]; ok {
		return s
	}
	return string(b)
}

// parseParams fills Params (array, or tuple) or NamedParams (map) and
// returns an error message for anything else.
func parseParams(req *Request, params []byte) string {
	h, err := readHead(params)
	if err != nil {
		return dontUnderstand(params)
	}
	if h.major == majorTag && h.arg == TagTuple {
		inner := params[h.size:]
		if h, err = readHead(inner); err != nil || h.major != majorArray {
			return dontUnderstand(params)
		}
		params = inner
	}
	switch h.major {
	case majorArray:
		req.Params = validatedItems(params, h, 1)
		return ""
	case majorMap:
		kv := validatedItems(params, h, 2)
		req.NamedParams = make(map[string]cbor.RawMessage, len(kv)/2)
		for i := 0; i < len(kv); i += 2 {
			key, ok := stringValue(kv[i])
			if !ok {
				return dontUnderstand(params)
			}
			req.NamedParams[key] = kv[i+1]
		}
		return ""
	}
	return dontUnderstand(params)
}

func dontUnderstand(params []byte) string {
	diag, err := cbor.Diagnose(params)
	if err != nil {
		diag = fmt.Sprintf("% x", params)
	}
	if len(diag) > 200 {
		diag = diag[:200] + "..."
	}
	return "don't understand params: " + diag
}
