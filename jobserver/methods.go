package jobserver

import (
	"maps"
	"slices"
)

// HasMethod reports whether the server offers the named RPC method (for
// bounding metric labels: unknown names come from clients).
func (js *JobServer) HasMethod(name string) bool {
	_, ok := js.methods[name]
	return ok
}

// Methods lists the RPC methods the server offers, sorted.
func (js *JobServer) Methods() []string {
	return slices.Sorted(maps.Keys(js.methods))
}
