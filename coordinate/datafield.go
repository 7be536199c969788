package coordinate

import "github.com/coordinated/coordinated/internal/cborx"

// Reasons written into a unit's data `traceback` when the server itself
// fails a unit.
const (
	TracebackTooManyRetries = "too many retries"
	TracebackCancelled      = "cancelled"
)

// DependencyFailedTraceback is the traceback of a unit failed because a
// unit it depends on failed or was deleted.
func DependencyFailedTraceback(dep UnitRef) string {
	return "dependency " + dep.Spec + "/" + dep.Key + " failed"
}

// WithTraceback returns data with its text key "traceback" set to msg (a
// text string), the way a worker reports a failure. Other entries are kept
// byte for byte; an existing "traceback" entry (byte or text key) is
// replaced. When data is not a map, the result is the map
// {"traceback": msg}.
func WithTraceback(data Data, msg string) Data {
	return SetDataKey(data, "traceback", TextData(msg))
}

// SetDataKey returns a copy of the CBOR map data with the text key key set
// to value (one encoded item). Entries whose key is the same string (byte
// or text) are dropped; others are kept verbatim and in order. When data is
// not a map, the result is a one-entry map.
func SetDataKey(data Data, key string, value Data) Data {
	pairs, isMap, err := rawMap(data)
	if err != nil || !isMap {
		pairs = nil
	}
	keyItem := TextData(key)
	body := make([]byte, 0, len(data)+len(keyItem)+len(value))
	n := 0
	for _, p := range pairs {
		if k, ok := rawString(p.Key); ok && k.Bytes == key {
			continue
		}
		body = append(body, p.Key...)
		body = append(body, p.Value...)
		n++
	}
	body = append(body, keyItem...)
	body = append(body, value...)
	n++
	out := cborx.AppendHead(make([]byte, 0, len(body)+9), cborx.MajorMap, uint64(n))
	return append(out, body...)
}

// TextData encodes s as a CBOR text string.
func TextData(s string) Data {
	return cborx.AppendText(make([]byte, 0, len(s)+9), s)
}
