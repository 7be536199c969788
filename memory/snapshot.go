package memory

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/coordinated/coordinated/coordinate"
)

// Snapshots (docs/persistence.md). A snapshot is the complete state of
// every namespace at a journal boundary, in a compact binary form:
//
//	"CDMS" version(uvarint 4) count(uvarint) namespace...
//
// Each namespace lists its specs with their units, its workers in expiry
// heap order and its groups. Derived indexes (counts, group members,
// dependents, children, holders) and the heaps are rebuilt on load rather
// than stored: each heap's order is total (priority or time, then key
// bytes), so the rebuilt heaps hand units out in the captured order.
//
// Capturing copies unit structs by value (unit data is never modified in
// place, so the byte slices are shared, not copied) a chunk at a time with
// copy-on-write (cow.go); each chunk is encoded and written outside the
// locks before the next is copied (writeCaptures).
//
// Version 2 lets a unit's data be a reference to a blob (blobs.go): flag
// flagDataBlob, and the data item is then the data's size (uvarint) and
// its SHA-256 (32 bytes). Version 1 has no such references. Version 3
// (written) adds to each spec's settings the ones control_work_spec set
// (WorkSpecMeta.Controlled, uvarint) after its runtime, and to each
// worker, after its outstanding units, the lapsed leases among them: a
// count (uvarint), then per lapsed lease the unit's index in the
// outstanding list (uvarint) and the lease's expiry (see
// workerRegistry.lapse). Version 4 (written) drops each unit's heap
// position (a uvarint after its heap, in versions 1 to 3): the heaps are
// rebuilt, so units may be listed in any order and a heap move changes
// nothing a snapshot holds. (A full snapshot lists each spec's units heap
// by heap in heap position order, for the speed of the next start, not
// as part of the format: cow.go, unitWalk.spec.) Versions 1 to 3 are still read (their heap
// positions skipped), 1 and 2 with no settings marked as set by
// control_work_spec and no lapsed leases.

const (
	snapshotMagic   = "CDMS"
	snapshotVersion = 4
)

// capturedNamespace is a namespace's state copied under its lock.
type capturedNamespace struct {
	name      string
	nextLease int64
	specs     []capturedSpec
	units     []unit // all specs' units, spec after spec; ext deep-copied
	lost      []int  // read whole (tests): units whose data is lost (-recover), in order
	workers   []capturedWorker
	groups    []capturedGroup
}

type capturedSpec struct {
	name       coordinate.Name
	definition []byte
	meta       coordinate.WorkSpecMeta
	archived   [coordinate.StatusFailed + 1]int
	units      int // how many of capturedNamespace.units are this spec's
	// A delta's (delta.go): the spec is new since the last snapshot, and
	// the keys of its units deleted since.
	fresh bool
	gone  []string
}

type capturedWorker struct {
	id          coordinate.Name
	mode, data  []byte
	parent      *coordinate.Name
	lastHeard   int64
	expires     int64
	outstanding []coordinate.UnitRef
	// lapsed maps outstanding units to the expiry of the worker's lease
	// on them that lapsed (workerRegistry.lapse); nil when none did.
	lapsed map[coordinate.UnitRef]int64
	// set is, in a capture, the worker's outstanding map itself, shared
	// with the state until the state next changes it (worker.own copies it
	// first): the writer turns it into outstanding and lapsed (resolve),
	// out of the lock.
	set map[*unit]int64
}

// resolve fills outstanding, sorted, and lapsed from set: in the writer,
// out of the lock, since set is not changed once captured. Units' keys
// and specs never change, so reading them there is safe.
func (cw *capturedWorker) resolve() {
	if cw.set == nil {
		return
	}
	cw.outstanding = make([]coordinate.UnitRef, 0, len(cw.set))
	for u, lapsed := range cw.set {
		cw.outstanding = append(cw.outstanding, u.ref())
		if lapsed != 0 {
			if cw.lapsed == nil {
				cw.lapsed = make(map[coordinate.UnitRef]int64)
			}
			cw.lapsed[u.ref()] = lapsed
		}
	}
	slices.SortFunc(cw.outstanding, compareRefs)
	cw.set = nil
}

type capturedGroup struct {
	name         string
	lastProgress int64
}

// captureWorkersAndGroups copies s's workers and groups; the caller holds
// the namespace lock. A worker's outstanding units are not copied: the
// capture shares its map (copied on the state's next change to it,
// worker.own) and the writer lists and sorts them (namespaceTail), so the
// pause does not grow with the leased units.
func captureWorkersAndGroups(s *state) (workers []capturedWorker, groups []capturedGroup) {
	for _, w := range s.workers.byExpiry {
		cw := capturedWorker{id: w.id, mode: w.mode, data: w.data, lastHeard: w.lastHeard, expires: w.expires}
		if w.parent != nil {
			p := *w.parent
			cw.parent = &p
		}
		cw.set = w.outstanding
		w.shared = true
		workers = append(workers, cw)
	}
	for g, gr := range s.groups {
		groups = append(groups, capturedGroup{name: g, lastProgress: gr.lastProgress})
	}
	return workers, groups
}

func compareRefs(a, b coordinate.UnitRef) int {
	if c := compareStrings(a.Spec, b.Spec); c != 0 {
		return c
	}
	return compareStrings(a.Key, b.Key)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Unit flag bits in a snapshot.
const (
	flagKeyText = 1 << iota
	flagHasWorker
	flagWorkerText
	flagExt
	flagDepFailed
	flagDataBlob // version 2: data is in the blob store
)

// writeCaptures encodes the captures of a snapshot as their units are
// walked (capture.units), a chunk at a time, so the snapshot is never
// held in memory whole. Large unit data goes to blobs as it passes.
// between runs between two lock holds of the walk. Every capture is
// walked to its end, even after an error.
func writeCaptures(out io.Writer, caps []*capture, blobs *blobBatch, between func()) error {
	e := newSnapWriter(out, blobs.refs)
	e.begin(len(caps))
	var errs []error
	for _, c := range caps {
		e.namespaceHead(c.out)
		heads := 0 // spec headers written
		err := c.units(false, between, func(i int, us []unit) error {
			for ; heads <= i; heads++ {
				e.specHead(&c.out.specs[heads])
			}
			for k := range us {
				if err := blobs.add(us[k].data); err != nil {
					return fmt.Errorf("namespace %q spec %q unit %q: %w", c.ns.name, c.out.specs[i].name.Bytes, us[k].key, err)
				}
				e.unit(&us[k])
			}
			return e.err
		})
		for ; heads < len(c.out.specs); heads++ {
			e.specHead(&c.out.specs[heads])
		}
		e.namespaceTail(c.out)
		errs = append(errs, err)
	}
	errs = append(errs, e.end())
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return blobs.commit(true)
}

func newSnapWriter(out io.Writer, blobs map[dataKey]blobHash) *snapWriter {
	return &snapWriter{w: bufio.NewWriterSize(out, 256<<10), blobs: blobs}
}

// begin writes the snapshot header, for n namespaces.
func (e *snapWriter) begin(n int) {
	e.raw([]byte(snapshotMagic))
	e.uint(snapshotVersion)
	e.uint(uint64(n))
}

// namespaceHead writes what comes before a namespace's first spec.
func (e *snapWriter) namespaceHead(c *capturedNamespace) {
	e.str(c.name)
	e.int(c.nextLease)
	e.uint(uint64(len(c.specs)))
}

// specHead writes what comes before a spec's units.
func (e *snapWriter) specHead(sp *capturedSpec) {
	e.specSettings(sp)
	e.uint(uint64(sp.units))
}

// specSettings writes a spec's name, definition, settings and archived
// counts.
func (e *snapWriter) specSettings(sp *capturedSpec) {
	e.name(sp.name)
	e.bytes(sp.definition)
	e.meta(&sp.meta)
	for _, n := range sp.archived {
		e.uint(uint64(n))
	}
}

// namespaceTail writes what comes after a namespace's last unit: its
// workers, each with its outstanding units sorted, and its groups sorted.
func (e *snapWriter) namespaceTail(c *capturedNamespace) {
	slices.SortFunc(c.groups, func(a, b capturedGroup) int { return compareStrings(a.name, b.name) })
	e.uint(uint64(len(c.workers)))
	for i := range c.workers {
		w := &c.workers[i]
		w.resolve()
		e.name(w.id)
		e.bytes(w.mode)
		e.bytes(w.data)
		e.bool(w.parent != nil)
		if w.parent != nil {
			e.name(*w.parent)
		}
		e.int(w.lastHeard)
		e.int(w.expires)
		e.refs(w.outstanding)
		e.uint(uint64(len(w.lapsed)))
		for i, r := range w.outstanding {
			if lapsed, ok := w.lapsed[r]; ok {
				e.uint(uint64(i))
				e.int(lapsed)
			}
		}
	}
	e.uint(uint64(len(c.groups)))
	for _, g := range c.groups {
		e.str(g.name)
		e.int(g.lastProgress)
	}
}

// end flushes what is buffered and returns the first error.
func (e *snapWriter) end() error {
	if e.err != nil {
		return e.err
	}
	return e.w.Flush()
}

func (e *snapWriter) unit(u *unit) {
	var flags uint64
	if u.keyText {
		flags |= flagKeyText
	}
	if u.workerKind != noWorker {
		flags |= flagHasWorker
	}
	if u.workerKind == workerTextName {
		flags |= flagWorkerText
	}
	if u.ext != nil {
		flags |= flagExt
		if u.ext.depFailed {
			flags |= flagDepFailed
		}
	}
	var blob blobHash
	inBlob := false
	if len(u.data) >= blobThreshold {
		blob, inBlob = e.blobs[keyOf(u.data)]
	}
	if inBlob {
		flags |= flagDataBlob
	}
	e.str(u.key)
	e.uint(flags)
	if inBlob {
		e.uint(uint64(len(u.data)))
		e.raw(blob[:])
	} else {
		e.bytes(u.data)
	}
	e.float(u.priority)
	e.int(u.expiration)
	e.int(u.notBefore)
	e.int(u.leaseID)
	e.str(u.worker)
	e.int(int64(u.attempts))
	e.uint(uint64(u.status))
	e.uint(uint64(u.where))
	if u.ext != nil {
		e.str(u.ext.group)
		e.refs(u.ext.deps)
	}
}

func (e *snapWriter) meta(m *coordinate.WorkSpecMeta) {
	e.int(int64(m.Priority))
	e.int(int64(m.Weight))
	e.bool(m.Paused)
	e.bool(m.Continuous)
	e.bool(m.CanBeContinuous)
	e.int(int64(m.Interval))
	e.int(nanos(m.NextContinuous))
	e.int(int64(m.MaxRunning))
	e.int(int64(m.MaxGetwork))
	e.int(int64(m.MaxRetries))
	e.float(m.MinGB)
	e.str(m.Then)
	e.bool(m.ThenPreempts)
	e.str(m.Runtime)
	e.uint(uint64(m.Controlled))
}

// snapWriter writes the primitive snapshot items, remembering the first
// error.
type snapWriter struct {
	w     *bufio.Writer
	blobs map[dataKey]blobHash
	buf   [binary.MaxVarintLen64]byte
	err   error
}

func (e *snapWriter) raw(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}
func (e *snapWriter) uint(v uint64) { e.raw(binary.AppendUvarint(e.buf[:0], v)) }
func (e *snapWriter) int(v int64)   { e.raw(binary.AppendVarint(e.buf[:0], v)) }
func (e *snapWriter) float(f float64) {
	e.raw(binary.LittleEndian.AppendUint64(e.buf[:0], math.Float64bits(f)))
}
func (e *snapWriter) bool(b bool) {
	if b {
		e.uint(1)
	} else {
		e.uint(0)
	}
}
func (e *snapWriter) str(s string) {
	e.uint(uint64(len(s)))
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}
func (e *snapWriter) bytes(b []byte) { e.uint(uint64(len(b))); e.raw(b) }
func (e *snapWriter) name(n coordinate.Name) {
	e.str(n.Bytes)
	e.bool(n.Text)
}
func (e *snapWriter) refs(rs []coordinate.UnitRef) {
	e.uint(uint64(len(rs)))
	for _, r := range rs {
		e.str(r.Spec)
		e.str(r.Key)
	}
}

// Smallest encodings, in bytes, of the items a snapshot counts: a count
// larger than the bytes left divided by these is damage, rejected before
// anything is allocated for it.
const (
	minNamespaceBytes = 5  // name, nextLease, three counts
	minSpecBytes      = 25 // name, definition, meta, archived, unit count
	minUnitBytes      = 19 // key, flags, data, float priority, 7 varints
	minWorkerBytes    = 8
	minGroupBytes     = 2
	minRefBytes       = 2
)

// snapPart is one piece of a decoded snapshot, handed out in file order:
// a namespace's start (ns: name and nextLease), each of its specs (spec)
// followed by its units in batches (units; lost lists the indexes in
// units of those whose data is lost), and the namespace's end (end;
// ns.workers and ns.groups).
type snapPart struct {
	ns    *capturedNamespace
	spec  *capturedSpec
	units []unit
	lost  []int
	end   bool
}

// decodeSnapshot decodes what writeCaptures wrote, passing it to emit
// piece by piece (units at most batch at a time, each batch its own
// allocation, which emit may keep); an error from emit stops it. maxBytes
// bounds the bytes in (journal.SnapshotInfo.MaxBytes). blob returns the
// data a reference names (nil: a reference is damage); if it returns
// errDropUnit, the unit is reported lost instead of failing. Every count
// and length is checked against the bytes left before anything is
// allocated for it, so damaged contents with valid checksums give an
// error, not an out-of-memory crash. Units come with spec unset; the
// receiver links them and checks the rest (statuses, heap positions,
// references).
func decodeSnapshot(in io.Reader, maxBytes int64, blob blobReader, batch int, emit func(*snapPart) error) error {
	d := newSnapReader(in, maxBytes, blob)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(d.r, magic); err != nil || string(magic) != snapshotMagic {
		return fmt.Errorf("not a memory-backend snapshot (magic %q)", magic)
	}
	d.version = d.uint()
	if d.err == nil && (d.version < 1 || d.version > snapshotVersion) {
		return fmt.Errorf("snapshot format version %d, this build reads 1 to %d", d.version, snapshotVersion)
	}
	d.left -= int64(len(snapshotMagic))
	nss := d.count(minNamespaceBytes)
	for range nss {
		c := &capturedNamespace{name: d.str(), nextLease: d.int()}
		if d.err != nil {
			break
		}
		if err := emit(&snapPart{ns: c}); err != nil {
			return err
		}
		for range d.count(minSpecBytes) {
			sp := d.specSettings()
			sp.units = d.count(minUnitBytes)
			if d.err != nil {
				break
			}
			if err := emit(&snapPart{spec: sp}); err != nil {
				return err
			}
			if err := d.emitUnits(sp.units, batch, emit); err != nil {
				return err
			}
		}
		d.namespaceTail(c)
		if d.err != nil {
			break
		}
		if err := emit(&snapPart{ns: c, end: true}); err != nil {
			return err
		}
	}
	return d.end()
}

// emitUnits decodes n units and passes them to emit in parts of at most
// batch, stopping at the first decoding error (left in d.err).
func (d *snapReader) emitUnits(n, batch int, emit func(*snapPart) error) error {
	for n > 0 && d.err == nil {
		p := d.units(min(n, batch))
		n -= len(p.units)
		if d.err != nil {
			break
		}
		if err := emit(p); err != nil {
			return err
		}
	}
	return nil
}

// specSettings reads what specSettings wrote; d.spec names the spec from
// then on (for errors).
func (d *snapReader) specSettings() *capturedSpec {
	sp := &capturedSpec{}
	sp.name = d.name()
	sp.definition = d.bytes()
	d.meta(&sp.meta)
	sp.meta.Task = coordinate.SpecTask(sp.name.Bytes, sp.meta.Runtime, sp.definition)
	for st := range sp.archived {
		sp.archived[st] = d.number(1 << 62)
	}
	d.spec = sp.name.Bytes
	return sp
}

// units reads n units as one batch (its own allocation).
func (d *snapReader) units(n int) *snapPart {
	p := &snapPart{units: make([]unit, n)}
	for k := range p.units {
		var lost bool
		if p.units[k], lost = d.unit(); lost {
			p.lost = append(p.lost, k)
		}
	}
	return p
}

// namespaceTail reads what namespaceTail wrote into c.
func (d *snapReader) namespaceTail(c *capturedNamespace) {
	c.workers = make([]capturedWorker, d.count(minWorkerBytes))
	for k := range c.workers {
		w := &c.workers[k]
		w.id = d.name()
		w.mode = d.bytes()
		w.data = d.bytes()
		if d.bool() {
			p := d.name()
			w.parent = &p
		}
		w.lastHeard = d.int()
		w.expires = d.int()
		w.outstanding = d.refs()
		if d.version >= 3 {
			d.lapsedLeases(w)
		}
	}
	c.groups = make([]capturedGroup, d.count(minGroupBytes))
	for k := range c.groups {
		c.groups[k] = capturedGroup{name: d.str(), lastProgress: d.int()}
	}
}

// end returns the first error, or one if anything follows the end.
func (d *snapReader) end() error {
	if d.err != nil {
		return d.err
	}
	if _, err := d.r.ReadByte(); err != io.EOF {
		return errors.New("data after the last namespace")
	}
	return nil
}

// unit reads a unit; lost reports that its data's blob is lost and the
// caller chose to drop the unit (errDropUnit).
func (d *snapReader) unit() (u unit, lost bool) {
	u = unit{key: d.str()}
	flags := d.uint()
	u.keyText = flags&flagKeyText != 0
	switch {
	case flags&flagHasWorker == 0:
	case flags&flagWorkerText != 0:
		u.workerKind = workerTextName
	default:
		u.workerKind = workerBytes
	}
	if flags&flagDataBlob == 0 {
		u.data = d.bytes()
	} else {
		u.data, lost = d.blobData(coordinate.UnitRef{Spec: d.spec, Key: u.key})
	}
	u.priority = d.float()
	u.expiration = d.int()
	u.notBefore = d.int()
	u.leaseID = d.int()
	u.worker = d.str()
	u.attempts = int32(d.int())
	u.status = coordinate.Status(d.uint())
	u.where = uint8(d.uint())
	if d.version < 4 {
		d.uint() // the heap position: heaps are rebuilt (builder.endSpec)
	}
	u.heapIdx = -1
	if flags&flagExt != 0 {
		u.ext = &unitExt{group: d.str(), deps: d.refs(), depFailed: flags&flagDepFailed != 0}
	}
	return u, lost
}

// blobReader returns the data of size n whose SHA-256 is h.
type blobReader func(h blobHash, n int) ([]byte, error)

// errDropUnit, from a blobReader, drops the unit whose data it cannot
// return (-recover) instead of failing the load.
var errDropUnit = errors.New("unit dropped")

// blobData reads a blob reference and returns the data it names.
func (d *snapReader) blobData(unit coordinate.UnitRef) (data []byte, lost bool) {
	n := d.uint()
	var h blobHash
	if d.err != nil {
		return nil, false
	}
	if _, err := io.ReadFull(d.r, h[:]); err != nil {
		d.fail(err)
		return nil, false
	}
	d.left -= int64(len(h))
	switch {
	case d.version < 2:
		d.fail(fmt.Errorf("spec %q unit %q: a blob reference in a version %d snapshot", unit.Spec, unit.Key, d.version))
	case n < blobThreshold || n > math.MaxInt32:
		d.fail(fmt.Errorf("spec %q unit %q: blob reference of implausible size %d", unit.Spec, unit.Key, n))
	case d.blob == nil:
		d.fail(fmt.Errorf("spec %q unit %q: a blob reference where no blob store is available", unit.Spec, unit.Key))
	default:
		data, err := d.blob(h, int(n))
		if errors.Is(err, errDropUnit) {
			return nil, true
		}
		if err != nil {
			d.fail(fmt.Errorf("spec %q unit %q: %w", unit.Spec, unit.Key, err))
		}
		return data, false
	}
	return nil, false
}

func (d *snapReader) meta(m *coordinate.WorkSpecMeta) {
	m.Priority = int(d.int())
	m.Weight = int(d.int())
	m.Paused = d.bool()
	m.Continuous = d.bool()
	m.CanBeContinuous = d.bool()
	m.Interval = time.Duration(d.int())
	m.NextContinuous = timeOf(d.int())
	m.MaxRunning = int(d.int())
	m.MaxGetwork = int(d.int())
	m.MaxRetries = int(d.int())
	m.MinGB = d.float()
	m.Then = d.str()
	m.ThenPreempts = d.bool()
	m.Runtime = d.str()
	if d.version >= 3 {
		m.Controlled = coordinate.ControlledSettings(d.number(math.MaxUint8))
	}
}

// snapReader reads the primitive snapshot items, remembering the first
// error; after an error every read returns a zero value. left is an upper
// bound of the bytes still to come.
type snapReader struct {
	r       *bufio.Reader
	left    int64
	version uint64
	blob    blobReader
	spec    string // the spec whose units are being read, for errors
	arena   []byte // the block small items are cut from (arenaMax)
	err     error
}

func newSnapReader(in io.Reader, maxBytes int64, blob blobReader) *snapReader {
	return &snapReader{r: bufio.NewReaderSize(in, 256<<10), left: maxBytes, blob: blob}
}

// ReadByte lets binary.ReadUvarint read through d, counting bytes.
func (d *snapReader) ReadByte() (byte, error) {
	b, err := d.r.ReadByte()
	if err == nil {
		d.left--
	}
	return b, err
}

func (d *snapReader) fail(err error) {
	if d.err == nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		d.err = err
	}
}

func (d *snapReader) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d)
	if err != nil {
		d.fail(err)
	}
	return v
}

func (d *snapReader) int() int64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(d)
	if err != nil {
		d.fail(err)
	}
	return v
}

// count reads the number of items whose encodings take at least minBytes
// each, and rejects a number that could not fit in the bytes left.
func (d *snapReader) count(minBytes int64) int {
	n := d.uint()
	if d.err != nil {
		return 0
	}
	if n > uint64(max(d.left, 0))/uint64(minBytes) {
		d.fail(fmt.Errorf("count %d of items of at least %d bytes cannot fit in the %d bytes left", n, minBytes, max(d.left, 0)))
		return 0
	}
	return int(n)
}

// number reads a non-negative number that is not a count of items that
// follow (archived unit counts), rejecting one above limit.
func (d *snapReader) number(limit uint64) int {
	n := d.uint()
	if n > limit {
		d.fail(fmt.Errorf("implausible number %d", n))
		return 0
	}
	return int(n)
}

func (d *snapReader) float() float64 {
	var b [8]byte
	if d.err != nil {
		return 0
	}
	if _, err := io.ReadFull(d.r, b[:]); err != nil {
		d.fail(err)
		return 0
	}
	d.left -= 8
	return math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
}

func (d *snapReader) bool() bool { return d.uint() != 0 }

func (d *snapReader) bytes() []byte {
	n := d.count(1)
	if d.err != nil {
		return nil
	}
	var b []byte
	if n > 0 && n <= arenaMax {
		if len(d.arena)+n > cap(d.arena) {
			d.arena = make([]byte, 0, arenaBlock)
		}
		k := len(d.arena)
		d.arena = d.arena[:k+n]
		b = d.arena[k : k+n : k+n]
	} else {
		b = make([]byte, n)
	}
	if _, err := io.ReadFull(d.r, b); err != nil {
		d.fail(err)
		return nil
	}
	d.left -= int64(n)
	return b
}

// Small strings and byte slices (keys, unit data, names) are cut from
// shared blocks rather than allocated one by one: recovery reads tens of
// millions, and each allocation costs time and a little memory, and the
// collector an object to mark for as long as the unit lives. A block
// stays allocated while anything cut from it lives, as the batch of
// units a unit is decoded in does (decodeSnapshot).
const (
	arenaMax   = 256      // longest item cut from a block
	arenaBlock = 64 << 10 // size of a block
)

// str reads a string. The bytes are freshly read and referenced by
// nothing else (slices cut from a block have no spare capacity), so the
// string takes them over instead of copying them.
func (d *snapReader) str() string {
	b := d.bytes()
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func (d *snapReader) name() coordinate.Name {
	return coordinate.Name{Bytes: d.str(), Text: d.bool()}
}

// lapsedLeases reads a worker's lapsed leases (version 3), each naming
// one of its outstanding units by index, in order.
func (d *snapReader) lapsedLeases(w *capturedWorker) {
	n := d.number(uint64(len(w.outstanding)))
	for k := range n {
		i := d.number(uint64(len(w.outstanding)) - 1)
		lapsed := d.int()
		if d.err != nil {
			return
		}
		if w.lapsed == nil {
			w.lapsed = make(map[coordinate.UnitRef]int64, n)
		}
		if _, dup := w.lapsed[w.outstanding[i]]; dup || lapsed == 0 {
			d.fail(fmt.Errorf("worker %q: lapsed lease %d of %d names unit %d again or has no time", w.id.Bytes, k, n, i))
			return
		}
		w.lapsed[w.outstanding[i]] = lapsed
	}
}

func (d *snapReader) refs() []coordinate.UnitRef {
	n := d.count(minRefBytes)
	if n == 0 || d.err != nil {
		return nil
	}
	rs := make([]coordinate.UnitRef, 0, min(n, 1024))
	for range n {
		rs = append(rs, coordinate.UnitRef{Spec: d.str(), Key: d.str()})
	}
	return rs
}
