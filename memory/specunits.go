package memory

// A spec's units: spec.units maps each key to its unit, the key index
// (keyindex.go) follows it once built, and spec.extUnits counts the units
// with an ext (a group or dependencies, now or once; dropspec.go relies
// on it). Only link, unlink and extend change the map, the index's
// membership and extUnits. link and unlink also keep spec.waited for the
// units they add and remove (the edges that make a key waited for change
// it in deps.go).

// link makes u its key's unit in sp (in the map and, if built, the index).
func (s *state) link(sp *spec, u *unit) {
	sp.units[u.key] = u
	if u.ext != nil {
		sp.extUnits++
	}
	if s.waitedFor(sp.name.Bytes, u.key) {
		sp.waited++
	}
	if sp.keys != nil {
		sp.keys.ReplaceOrInsert(u)
	}
}

// unlink removes u, its key's unit, from sp.
func (s *state) unlink(sp *spec, u *unit) {
	delete(sp.units, u.key)
	if u.ext != nil {
		sp.extUnits--
	}
	if s.waitedFor(sp.name.Bytes, u.key) {
		sp.waited--
	}
	if sp.keys != nil {
		sp.keys.Delete(u)
	}
}

// extend gives u, a unit of its spec, an ext if it has none yet.
func (u *unit) extend() {
	if u.ext == nil {
		u.ext = &unitExt{}
		u.spec.extUnits++
	}
}
