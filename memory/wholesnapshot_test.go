package memory

// Whole-namespace capture, blob preparation, encoding, decoding and
// restore: the one-go forms of what Snapshot (writeCaptures) and recovery
// (loadParallel) stream, kept for tests that compare states and bytes.

import (
	"fmt"
	"io"
	"slices"
)

// captureNamespace copies ns's state at once; the caller holds ns.mu.
// Snapshot streams its capture instead (writeCaptures).
func captureNamespace(ns *namespace) *capturedNamespace {
	c := beginCapture(ns, captureChunk, false)
	out := c.out
	err := c.units(true, nil, func(_ int, us []unit) error {
		out.units = append(out.units, us...)
		return nil
	})
	if err != nil {
		panic(err)
	}
	return out
}

// readSnapshot decodes what writeSnapshot wrote into whole namespaces
// (decodeSnapshot says what is checked). Units come back in
// capturedNamespace.units with spec unset, the lost ones listed in
// capturedNamespace.lost; restore links them and checks the rest.
// Recovery streams instead (loadParallel).
func readSnapshot(in io.Reader, maxBytes int64, blob blobReader) ([]*capturedNamespace, error) {
	var nss []*capturedNamespace
	var c *capturedNamespace
	err := decodeSnapshot(in, maxBytes, blob, 1<<16, func(p *snapPart) error {
		switch {
		case p.spec != nil:
			c.specs = append(c.specs, *p.spec)
			c.units = slices.Grow(c.units, min(p.spec.units, 1<<24))
		case p.units != nil:
			for _, k := range p.lost {
				c.lost = append(c.lost, len(c.units)+k)
			}
			c.units = append(c.units, p.units...)
		case p.end:
			c.workers, c.groups = p.ns.workers, p.ns.groups
			nss = append(nss, c)
		default:
			c = &capturedNamespace{name: p.ns.name, nextLease: p.ns.nextLease}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return nss, nil
}

// restore builds the state of a namespace decoded whole (readSnapshot) or
// captured, dropping the units listed in c.lost: it feeds the builder in
// one go.
func (c *capturedNamespace) restore() (*state, error) {
	b := newBuilder(c.nextLease)
	units, lost := c.units, c.lost
	for i := range c.specs {
		cs := &c.specs[i]
		if err := b.spec(cs); err != nil {
			return nil, err
		}
		if cs.units < 0 || cs.units > len(units) {
			return nil, fmt.Errorf("spec %q claims %d units, %d left", cs.name.Bytes, cs.units, len(units))
		}
		var mine []int
		for len(lost) > 0 && lost[0] < cs.units {
			mine = append(mine, lost[0])
			lost = lost[1:]
		}
		for k := range lost {
			lost[k] -= cs.units
		}
		if cs.units > 0 {
			if err := b.units(units[:cs.units], mine); err != nil {
				return nil, err
			}
		}
		units = units[cs.units:]
	}
	st, _, err := b.finish(c.workers, c.groups)
	return st, err
}

// writeSnapshot encodes whole captured namespaces (writeCaptures streams). Unit data found in blobs (by
// blobStore.prepare; nil: none) is written as a reference.
func writeSnapshot(out io.Writer, nss []*capturedNamespace, blobs map[dataKey]blobHash) error {
	e := newSnapWriter(out, blobs)
	e.begin(len(nss))
	for _, c := range nss {
		e.namespaceHead(c)
		units := c.units
		for i := range c.specs {
			sp := &c.specs[i]
			e.specHead(sp)
			for j := range units[:sp.units] {
				e.unit(&units[j])
			}
			units = units[sp.units:]
		}
		e.namespaceTail(c)
	}
	return e.end()
}

// prepare makes sure every large unit data of nss is in the store, and
// returns the hash of each, for writeSnapshot (a snapshot adds its blobs
// as writeCaptures streams them, blobBatch).
func (s *blobStore) prepare(nss []*capturedNamespace) (map[dataKey]blobHash, error) {
	b := s.batch()
	for _, c := range nss {
		for i := range c.units {
			if err := b.add(c.units[i].data); err != nil {
				return nil, fmt.Errorf("namespace %q unit %q: %w", c.name, c.units[i].key, err)
			}
		}
	}
	if err := b.commit(); err != nil {
		return nil, err
	}
	return b.refs, nil
}
