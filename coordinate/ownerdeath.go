package coordinate

// ReleaseLeasesKey is the key of a worker's heartbeat data by which it
// asks that its leases end as soon as its registration lapses or it
// unregisters (docs/compat.md, "Go workers"): a crashed worker's units are
// then retried within its registration lifetime instead of after their
// leases. The Python daemon stores the data without reading it, and
// Python workers never send the key.
const ReleaseLeasesKey = "release_leases_on_exit"

// ReleasesLeasesOnExit reports whether heartbeat data asks for the
// release: a map whose ReleaseLeasesKey entry (byte or text key) is true
// by Python truth.
func ReleasesLeasesOnExit(data Data) bool {
	pairs, isMap, err := rawMap(data)
	if err != nil || !isMap {
		return false
	}
	v, ok := stringKeyed(pairs)[ReleaseLeasesKey]
	return ok && Truthy(v)
}
