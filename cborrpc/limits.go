package cborrpc

// Limits applied to every incoming CBOR item, whether by this package's own
// scanner or by the fxamacker decoder handlers get from DecMode. They are
// generous on purpose: one `coordinate load` request carries a whole file of
// work units in one array (DECISIONS §7).
const (
	// DefaultMaxRequestSize is the default cap on the bytes of one request
	// item (DECISIONS §7).
	DefaultMaxRequestSize int64 = 256 << 20
	// MaxNestingDepth is the deepest nesting of arrays, maps and tags
	// accepted in a request.
	MaxNestingDepth = 256
	// MaxContainerItems caps the elements of one array and the pairs of
	// one map.
	MaxContainerItems = 1 << 26
)

// allowedTag reports whether a request may carry this CBOR tag: exactly the
// tags the Python client's TagMapper understands (PROTOCOL §5.1), plus the
// bignums its decoder produces for large integers. Any other tag killed the
// Python daemon's connection thread, and it closes ours.
func allowedTag(num uint64) bool {
	switch num {
	case 2, 3, 24, 37, 128:
		return true
	}
	return false
}
