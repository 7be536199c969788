package cborrpc

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/internal/cborx"
)

// call is one parsed request ready to run: either a request (with reqErr
// set when the envelope itself is unusable and the handler must not run)
// or a batch of calls.
type call struct {
	req    Request
	reqErr string
	batch  []call // non-nil for a batch (may be empty)
}

// batchCallBytes is what one request of a batch costs the server beyond
// its bytes: its element, its call and its reply (a batch of 262,144
// one-byte requests allocated 529 bytes per request, their 64-byte error
// replies included, measured by TotalAlloc over three runs). A
// batch charges that much per request to the connection's request memory
// (charge) before anything is allocated for it, so that a request of
// tiny elements cannot make the server allocate hundreds of times its
// size outside the daemon-wide request budget.
const batchCallBytes = 512

// parseTop parses one top-level item (tag-24 envelope already removed).
// closeConn is true for a top-level null or undefined: close without
// reply. charge (nil: nothing to account) is asked for batchCallBytes
// per request of a batch; its error refuses the item.
func parseTop(item []byte, charge func(int64) error) (c call, closeConn bool, err error) {
	if len(item) == 0 {
		return call{}, false, cborx.Malformed("empty tag-24 envelope")
	}
	n, err := validate(item)
	if err != nil {
		return call{}, false, err
	}
	if n != len(item) {
		return call{}, false, cborx.Malformed("%d bytes after the request item", len(item)-n)
	}
	if item[0] == 0xF6 || item[0] == 0xF7 {
		return call{}, true, nil
	}
	c, err = parseCall(item, 0, charge)
	return c, false, err
}

// parseCall parses a validated item that must be a request map, a tag-24
// wrapped request, or a batch array of those.
func parseCall(item []byte, depth int, charge func(int64) error) (call, error) {
	if depth > MaxNestingDepth {
		return call{}, cborx.Malformed("batch nested deeper than %d levels", MaxNestingDepth)
	}
	h, err := cborx.ReadHead(item)
	if err != nil {
		return call{}, err
	}
	switch h.Major {
	case cborx.MajorTag:
		if h.Arg != 24 {
			return call{}, cborx.Malformed("tag %d where a request was expected", h.Arg)
		}
		inner, err := unwrapTag24(item)
		if err != nil {
			return call{}, err
		}
		n, err := validate(inner)
		if err != nil {
			return call{}, err
		}
		if n != len(inner) {
			return call{}, cborx.Malformed("%d bytes after a tag-24 wrapped request", len(inner)-n)
		}
		return parseCall(inner, depth+1, charge)
	case cborx.MajorArray:
		if charge != nil {
			n := h.Arg // an indefinite array holds at most one request per byte
			if h.Indefinite() {
				n = uint64(len(item))
			}
			if err := charge(int64(min(n, uint64(len(item)))) * batchCallBytes); err != nil {
				return call{}, err
			}
		}
		elems, _, _ := cborx.Elements(nil, item)
		batch := make([]call, len(elems))
		for i, e := range elems {
			if batch[i], err = parseCall(e, depth+1, charge); err != nil {
				return call{}, err
			}
		}
		return call{batch: batch}, nil
	case cborx.MajorMap:
		return parseRequest(item)
	}
	return call{}, cborx.Malformed("top-level item of major type %d is not a request", h.Major)
}

// parseRequest reads the envelope of a validated request map (PROTOCOL
// §3.1). Keys may be byte or text strings; other keys are ignored.
func parseRequest(item []byte) (call, error) {
	var c call
	var method, params []byte
	cborx.EachPair(item, func(key, val []byte) {
		switch envelopeKey(key) {
		case "id":
			c.req.ID = val
		case "method":
			method = val
		case "params":
			params = val
		}
	})
	if method == nil {
		c.reqErr = "KeyError('method',)\nrequest has no method\n"
		return c, nil
	}
	name, _, ok := cborx.String(method)
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
	b, _, ok := cborx.String(key)
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
// jobserver's TestCborrpcInternsEveryMethod checks it holds every method
// of jobserver's table.
var methodNames = func() map[string]string {
	m := make(map[string]string)
	for _, n := range []string{
		"set_work_spec", "get_work_spec", "list_work_specs", "control_work_spec",
		"get_work_spec_meta", "clear", "del_work_spec", "archive", "add_work_units",
		"count_work_units", "get_work_units", "prioritize_work_units", "del_work_units",
		"get_work_unit_status", "update_work_unit", "get_work", "get_child_work_units",
		"group_status", "cancel_group",
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
	elems, h, ok := cborx.Elements(nil, untupleList(params))
	switch {
	case ok && h.Major == cborx.MajorArray:
		req.Params = elems
		return ""
	case ok && h.Major == cborx.MajorMap && !isTuple(params):
		req.NamedParams = make(map[string]cbor.RawMessage, len(elems)/2)
		for i := 0; i < len(elems); i += 2 {
			key, ok := stringValue(elems[i])
			if !ok {
				return dontUnderstand(params)
			}
			req.NamedParams[key] = elems[i+1]
		}
		return ""
	}
	return dontUnderstand(params)
}

// untupleList strips a tuple tag from params that wrap an array.
func untupleList(params []byte) []byte {
	inner, _ := cborx.Untuple(params)
	return inner
}

// isTuple reports params wrapped in the tuple tag.
func isTuple(params []byte) bool {
	_, tuple := cborx.Untuple(params)
	return tuple
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
