package cborrpc

import (
	"github.com/coordinated/coordinated/internal/cborx"
)

// requestLimits is the protocol's policy for every item a peer sends:
// the limits of limits.go and the tags allowedTag admits. The walking
// itself is cborx's.
var requestLimits = cborx.Limits{
	MaxDepth: MaxNestingDepth,
	MaxItems: MaxContainerItems,
	AllowTag: allowedTag,
}

// validate checks that the item at the start of b is well-formed and
// within the protocol's policy, and returns its length.
func validate(b []byte) (int, error) {
	return requestLimits.Validate(b)
}

// stringValue returns the contents of the byte or text string item b
// (definite or indefinite length); ok is false for any other item.
func stringValue(b []byte) (string, bool) {
	s, _, ok := cborx.StringValue(b)
	return s, ok
}
