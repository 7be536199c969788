package pyimport

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/coordinate/coordinatetest"
	"github.com/coordinated/coordinated/journal"
	"github.com/coordinated/coordinated/memory"
)

// The files in testdata/ were written by the real Python daemon
// (testdata/gen.py): snapshot A, the action log after it, and snapshot B
// the daemon wrote after that log.
const (
	snapA = "testdata/snapshot_20250101_000001.000"
	logAB = "testdata/log_20250101_000002.000"
	snapB = "testdata/snapshot_20250101_000003.000"
)

func readSnap(t *testing.T, path string) *State {
	t.Helper()
	st, _, err := Read(Source{Snapshot: path}, time.Now())
	if err != nil {
		t.Fatalf("Read(%s): %v", path, err)
	}
	return st
}

func TestReadSnapshotFields(t *testing.T) {
	st := readSnap(t, snapA)
	if got := st.SpecNames(); !reflect.DeepEqual(got, []string{"flow", "paused", "sink", "tick", "été"}) {
		t.Fatalf("specs = %q", got)
	}
	flow, sink, paused, tick := st.Specs["flow"], st.Specs["sink"], st.Specs["paused"], st.Specs["tick"]
	if flow.Weight != 15 || flow.Paused || flow.Continuous || flow.MaxRunning != 0 {
		t.Errorf("flow = %+v", flow)
	}
	if sink.Weight != 9 || sink.MaxRunning != 3 {
		t.Errorf("sink weight %d max_running %d, want 9 (control_work_spec) and 3", sink.Weight, sink.MaxRunning)
	}
	if !paused.Paused {
		t.Error("paused spec not paused")
	}
	if !tick.Continuous || tick.Interval != 3600 || tick.NextContinuous == 0 {
		t.Errorf("tick = %+v", tick)
	}
	if !st.Specs["été"].Name.Text || st.Specs["flow"].Name.Text {
		t.Error("spec name string kinds not kept (unicode = text, str = bytes)")
	}
	f0, f1, texte := flow.Units["f0"], flow.Units["f1"], flow.Units["texte"]
	if f0.Status != coordinate.StatusFailed || f0.Worker == nil || f0.Worker.Bytes != "worker-a" || f0.LeaseTime == 0 {
		t.Errorf("f0 = %+v", f0)
	}
	if !bytes.Contains(f0.Data, []byte("ValueError: boom")) {
		t.Errorf("f0 lost its traceback: %q", f0.Data)
	}
	if f1.Status != coordinate.StatusPending || f1.Worker.Bytes != "worker-b" || f1.LeaseTime < 1.7e9 {
		t.Errorf("f1 = %+v", f1)
	}
	if texte.Status != coordinate.StatusFinished || texte.Priority != 7 || !texte.Key.Text {
		t.Errorf("texte = %+v", texte)
	}
	if s1 := sink.Units["s1"]; s1 == nil || s1.Priority != 7 || s1.Status != coordinate.StatusAvailable {
		t.Errorf("chained s1 = %+v, want available with the parent's priority 7", s1)
	}
	for _, u := range tick.Units {
		if u.Status != coordinate.StatusPending || u.Priority != -1 || u.Worker.Bytes != "worker-c" {
			t.Errorf("continuous unit = %+v", u)
		}
	}
}

// TestReplayMatchesPython replays the log over snapshot A and compares the
// result with snapshot B, which the Python daemon wrote after the same
// changes. Only times the replay cannot know differ: completion times
// (f2, f3) and a lease given in relative seconds (f4).
func TestReplayMatchesPython(t *testing.T) {
	// Replayed now, and long after every lease in the files has lapsed:
	// the log's leases are replayed as they were, whenever that is.
	t.Run("Now", func(t *testing.T) { testReplayMatchesPython(t, time.Now()) })
	t.Run("LeasesLapsed", func(t *testing.T) { testReplayMatchesPython(t, time.Now().Add(240*time.Hour)) })
}

func testReplayMatchesPython(t *testing.T, now time.Time) {
	got, rep, err := Read(Source{Snapshot: snapA, Logs: []string{logAB}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 18 || len(rep.Torn) != 0 {
		t.Errorf("report = %+v, want 18 records, no torn tail", rep)
	}
	want := readSnap(t, snapB)
	if !reflect.DeepEqual(got.SpecNames(), want.SpecNames()) {
		t.Fatalf("specs %q, want %q", got.SpecNames(), want.SpecNames())
	}
	relTimes := map[string]bool{"flow/f2": true, "flow/f3": true, "flow/f4": true}
	for _, n := range want.SpecNames() {
		g, w := got.Specs[n], want.Specs[n]
		if !reflect.DeepEqual(g.Definition, w.Definition) || g.Weight != w.Weight || g.Paused != w.Paused ||
			g.Continuous != w.Continuous || g.Interval != w.Interval || g.MaxRunning != w.MaxRunning ||
			!reflect.DeepEqual(g.Archived, w.Archived) {
			t.Errorf("spec %q: replayed %+v, Python %+v", n, g, w)
		}
		if len(g.Units) != len(w.Units) {
			t.Errorf("spec %q: %d units replayed, Python has %d", n, len(g.Units), len(w.Units))
		}
		for k, wu := range w.Units {
			gu := g.Units[k]
			if gu == nil {
				t.Errorf("unit %s/%s missing after replay", n, k)
				continue
			}
			gc, wc := *gu, *wu
			if relTimes[n+"/"+k] {
				if gc.LeaseTime < unixSeconds(now)-1 || gc.LeaseTime > unixSeconds(now)+601 {
					t.Errorf("unit %s/%s lease_time %v not near now", n, k, gc.LeaseTime)
				}
				gc.LeaseTime, wc.LeaseTime = 0, 0
			}
			if !reflect.DeepEqual(gc, wc) {
				t.Errorf("unit %s/%s: replayed %+v, Python %+v", n, k, gc, wc)
			}
		}
	}
}

func TestCompressedSnapshots(t *testing.T) {
	plain := readSnap(t, snapA)
	for _, path := range []string{
		"testdata/compressed/snapshot_20250101_000001.000.bz2",
		"testdata/compressed/snapshot_20250101_000001.000.xz",
	} {
		if err := CheckMD5(path); err != nil {
			t.Errorf("CheckMD5(%s): %v", path, err)
		}
		if got := readSnap(t, path); !reflect.DeepEqual(got, plain) {
			t.Errorf("%s differs from the uncompressed snapshot", path)
		}
	}
	// Written gzip-compressed by the Python daemon itself, in its own run.
	gz := "testdata/gz/snapshot_20250101_000001.000.gz"
	if err := CheckMD5(gz); err != nil {
		t.Errorf("CheckMD5(%s): %v", gz, err)
	}
	got := readSnap(t, gz)
	if !reflect.DeepEqual(got.SpecNames(), plain.SpecNames()) || !reflect.DeepEqual(got.Specs["flow"].Counts(), plain.Specs["flow"].Counts()) {
		t.Errorf("gzip snapshot: specs %q flow counts %v", got.SpecNames(), got.Specs["flow"].Counts())
	}
}

// copyFile copies a testdata file into dir under name, with mtime.
func copyFile(t *testing.T, src, dir, name string, mtime time.Time) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dst, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestLocate(t *testing.T) {
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	format := func(dir string) string { return filepath.Join(dir, "snapshot_{timestamp}") }
	logFormat := func(dir string) string { return filepath.Join(dir, "log_{timestamp}") }

	t.Run("EmptyDirectory", func(t *testing.T) {
		dir := t.TempDir()
		f, err := Locate(format(dir), logFormat(dir))
		if err != nil || f.Snapshot != "" || len(f.Logs) != 0 || f.Candidates != 0 {
			t.Fatalf("Locate(empty) = %+v, %v", f, err)
		}
	})
	t.Run("NewestCompleteAndLaterLogs", func(t *testing.T) {
		dir := t.TempDir()
		a := copyFile(t, snapA, dir, "snapshot_20250101_000001.000", base)
		copyFile(t, snapA+".md5", dir, "snapshot_20250101_000001.000.md5", base)
		copyFile(t, logAB, dir, "log_20250101_000002.000", base.Add(time.Second))
		copyFile(t, logAB, dir, "log_20241231_000000.000", base.Add(-time.Hour)) // before A: in A
		b := copyFile(t, snapB, dir, "snapshot_20250101_000003.000", base.Add(2*time.Second))
		// B's sidecar is wrong: B is skipped for A, and the log after A
		// is replayed.
		if err := os.WriteFile(b+".md5", []byte("0123456789abcdef0123456789abcdef\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Locate(format(dir), logFormat(dir))
		if err != nil {
			t.Fatal(err)
		}
		if f.Snapshot != a || f.Candidates != 2 {
			t.Errorf("chose %q of %d, want %q", f.Snapshot, f.Candidates, a)
		}
		if len(f.Skipped) != 1 || f.Skipped[0].Path != b || !strings.Contains(f.Skipped[0].Reason, "MD5 mismatch") {
			t.Errorf("skipped = %+v", f.Skipped)
		}
		if want := []string{filepath.Join(dir, "log_20250101_000002.000")}; !reflect.DeepEqual(f.Logs, want) {
			t.Errorf("logs = %q, want %q", f.Logs, want)
		}
		// With B's sidecar right, B wins and no log follows it.
		copyFile(t, snapB+".md5", dir, "snapshot_20250101_000003.000.md5", base)
		f, err = Locate(format(dir), logFormat(dir))
		if err != nil || f.Snapshot != b || len(f.Logs) != 0 {
			t.Errorf("with B complete: %+v, %v", f, err)
		}
	})
	t.Run("NoSidecarOrEmptySidecar", func(t *testing.T) {
		dir := t.TempDir()
		copyFile(t, snapA, dir, "snapshot_20250101_000001.000", base)
		copyFile(t, snapB, dir, "snapshot_20250101_000003.000", base)
		if err := os.WriteFile(filepath.Join(dir, "snapshot_20250101_000003.000.md5"), []byte("\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		copyFile(t, logAB, dir, "log_20250101_000002.000", base)
		f, err := Locate(format(dir), logFormat(dir))
		if err != nil || f.Snapshot != "" || len(f.Skipped) != 2 || len(f.Logs) != 0 {
			t.Errorf("Locate = %+v, %v; want nothing complete, both skipped, no logs replayed", f, err)
		}
	})
	t.Run("CompressedBySuffix", func(t *testing.T) {
		dir := t.TempDir()
		gz := copyFile(t, "testdata/gz/snapshot_20250101_000001.000.gz", dir, "snapshot_20250101_000001.000.gz", base)
		copyFile(t, "testdata/gz/snapshot_20250101_000001.000.gz.md5", dir, "snapshot_20250101_000001.000.gz.md5", base)
		f, err := Locate(format(dir), "")
		if err != nil || f.Snapshot != gz {
			t.Errorf("Locate = %+v, %v; want the .gz snapshot", f, err)
		}
	})
	t.Run("OnlyLogs", func(t *testing.T) {
		dir := t.TempDir()
		copyFile(t, logAB, dir, "log_20250101_000002.000", base)
		f, err := Locate(format(dir), logFormat(dir))
		if err != nil || f.Snapshot != "" || len(f.Logs) != 1 {
			t.Errorf("Locate = %+v, %v; want the log replayed from empty", f, err)
		}
	})
}

// wantFormatError checks err is a *FormatError for file at offset whose
// message contains msg.
func wantFormatError(t *testing.T, err error, file string, offset int64, msg string) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T), want a *FormatError", err, err)
	}
	if fe.File != file || fe.Offset != offset || !strings.Contains(fe.Msg, msg) {
		t.Errorf("error %q, want file %s offset %d and %q", err, file, offset, msg)
	}
	if !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), fmt.Sprintf("byte %d", offset)) {
		t.Errorf("message %q does not name the file and offset", err)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	a, err := os.ReadFile(snapA)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	starts := itemStarts(t, a)
	// Cut inside the third spec: the error names where it starts.
	trunc := write("truncated", a[:starts[2]+20])
	_, _, err = Read(Source{Snapshot: trunc}, time.Now())
	wantFormatError(t, err, trunc, starts[2], "truncated")

	first := a[:starts[1]]
	shape := write("shape", append(append([]byte{}, first...), 0x83, 0x01, 0x02, 0x03))
	_, _, err = Read(Source{Snapshot: shape}, time.Now())
	wantFormatError(t, err, shape, starts[1], "array of 5, 6 or 9 items")

	notCBOR := write("garbage", append(append([]byte{}, first...), 0xff, 0x00))
	_, _, err = Read(Source{Snapshot: notCBOR}, time.Now())
	wantFormatError(t, err, notCBOR, starts[1], "")

	// ["sws", record, []]: a SQLite-backed Python daemon's record.
	sws := write("sws", []byte{0x83, 0x43, 's', 'w', 's', 0x80, 0x80})
	_, _, err = Read(Source{Snapshot: sws}, time.Now())
	wantFormatError(t, err, sws, 0, "sqlite_path")

	mapped := write("map", []byte{0xa1, 0x41, 'x', 0x01})
	_, _, err = Read(Source{Snapshot: mapped}, time.Now())
	wantFormatError(t, err, mapped, 0, "expected the 9-item work spec array, got a map")

	// A log with an unknown action after good ones: the error names it
	// and nothing is replayed.
	l, err := os.ReadFile(logAB)
	if err != nil {
		t.Fatal(err)
	}
	// ["explode", []]
	unknown := write("log_unknown", append(append([]byte{}, l...), 0x82, 0x47, 'e', 'x', 'p', 'l', 'o', 'd', 'e', 0x80))
	_, _, err = Read(Source{Snapshot: snapA, Logs: []string{unknown}}, time.Now())
	wantFormatError(t, err, unknown, int64(len(l)), `unknown action "explode"`)

	// A log cut inside a record (what a stopped daemon leaves): its
	// complete records are replayed and the cut one is reported, also
	// before another log (the daemon was restarted).
	ls := itemStarts(t, l)
	torn := write("log_torn", l[:ls[5]+10])
	st, rep, err := Read(Source{Snapshot: snapA, Logs: []string{torn}}, time.Now())
	if err != nil || len(rep.Torn) != 1 || rep.Torn[0] != (TornLog{torn, ls[5]}) || rep.Records != 5 {
		t.Fatalf("torn newest log: %+v, %v; want 5 records and a torn tail at %d", rep, err, ls[5])
	}
	if st.Specs["late"] == nil {
		t.Error("records before the torn tail were not replayed")
	}
	_, rep, err = Read(Source{Snapshot: snapA, Logs: []string{torn, logAB}}, time.Now())
	if err != nil || len(rep.Torn) != 1 || rep.Torn[0] != (TornLog{torn, ls[5]}) || rep.Records != 5+len(ls) {
		t.Fatalf("torn log before another: %+v, %v; want %d records and a torn tail at %d", rep, err, 5+len(ls), ls[5])
	}

	wrongArgs := write("log_args", []byte{0x82, 0x4d, 's', 'e', 't', '_', 'w', 'o', 'r', 'k', '_', 's', 'p', 'e', 'c', 0x82, 0xa0, 0xa0})
	_, _, err = Read(Source{Logs: []string{wrongArgs}}, time.Now())
	wantFormatError(t, err, wrongArgs, 0, "expected 1 arguments")
}

// itemStarts returns the offsets at which the CBOR items of data start.
func itemStarts(t *testing.T, data []byte) []int64 {
	t.Helper()
	dec := decMode.NewDecoder(bytes.NewReader(data))
	var starts []int64
	for {
		off := int64(dec.NumBytesRead())
		var v item
		if err := dec.Decode(&v); err != nil {
			return starts
		}
		starts = append(starts, off)
	}
}

func TestLoad(t *testing.T) {
	ctx := context.Background()
	st := readSnap(t, snapB)
	// Before the files were written, so no lease in them has lapsed.
	b := memory.New(memory.Options{Clock: coordinate.NewFakeClock(time.Unix(1e9, 0))})
	defer b.Close()
	ns, err := b.Namespace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Load(ctx, ns, st, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range sum.Specs {
		got, err := ns.CountWorkUnits(ctx, sp.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, sp.Counts) {
			t.Errorf("spec %q counts %v, summary says %v", sp.Name, got, sp.Counts)
		}
	}
	var table bytes.Buffer
	if err := sum.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "total (6 specs)") {
		t.Errorf("table:\n%s", table.String())
	}
	// Again: refused, naming the specs; with replace, done again.
	if _, err := Load(ctx, ns, st, false); !errors.Is(err, ErrSpecsExist) || !strings.Contains(err.Error(), `"flow"`) {
		t.Errorf("second Load: %v, want ErrSpecsExist naming the specs", err)
	}
	if err := ns.UpdateWorkUnit(ctx, "flow", "f1", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, ns, st, true); err != nil {
		t.Fatalf("Load with replace: %v", err)
	}
	if u, _ := ns.GetWorkUnits(ctx, "flow", []string{"f1"}); u[0].Status != coordinate.StatusPending {
		t.Errorf("after replace f1 is %v, want pending again", u[0].Status)
	}
}

// failingNS refuses the import of one spec.
type failingNS struct {
	coordinate.Namespace
	fail string
}

func (f failingNS) ImportWorkSpec(ctx context.Context, in *coordinate.ImportedWorkSpec) error {
	if bytes.Contains(in.Definition, []byte(f.fail)) {
		return errors.New("disk full")
	}
	return f.Namespace.ImportWorkSpec(ctx, in)
}

func TestLoadFailureUndoes(t *testing.T) {
	ctx := context.Background()
	b := memory.New(memory.Options{Clock: coordinate.SystemClock{}})
	defer b.Close()
	ns, err := b.Namespace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Load(ctx, failingNS{ns, "tick"}, readSnap(t, snapA), false)
	if err == nil || !strings.Contains(err.Error(), `"tick"`) {
		t.Fatalf("Load = %v, want the failure naming spec tick", err)
	}
	if specs, _, _ := ns.ListWorkSpecs(ctx, "", 0); len(specs) != 0 {
		t.Errorf("%d specs left after a failed load", len(specs))
	}
}

var _ coordinate.BulkImporter = (*bulkNS)(nil)

// bulkNS imports in bulk and counts how it was asked to import.
type bulkNS struct {
	coordinate.Namespace
	bulk, single int
}

func (b *bulkNS) ImportWorkSpec(ctx context.Context, in *coordinate.ImportedWorkSpec) error {
	b.single++
	return b.Namespace.ImportWorkSpec(ctx, in)
}

func (b *bulkNS) ImportWorkSpecs(ctx context.Context, specs []*coordinate.ImportedWorkSpec, replace bool) error {
	b.bulk++
	if replace {
		return errors.New("bulkNS does not replace")
	}
	for _, in := range specs {
		if err := b.Namespace.ImportWorkSpec(ctx, in); err != nil {
			return err
		}
	}
	return nil
}

// A namespace that imports atomically (PostgreSQL) gets every spec in one
// call, so an import the process does not finish leaves nothing half
// done for the next start to mistake for a complete queue.
func TestLoadUsesBulkImport(t *testing.T) {
	ctx := context.Background()
	b := memory.New(memory.Options{Clock: coordinate.NewFakeClock(time.Unix(1e9, 0))})
	defer b.Close()
	ns, err := b.Namespace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	bn := &bulkNS{Namespace: ns}
	sum, err := Load(ctx, bn, readSnap(t, snapB), false)
	if err != nil {
		t.Fatal(err)
	}
	if bn.bulk != 1 || bn.single != 0 || len(sum.Specs) != 6 {
		t.Errorf("bulk calls %d, single %d, specs in the summary %d; want 1, 0, 6", bn.bulk, bn.single, len(sum.Specs))
	}
}

// TestTornGzipLog: with a log_path_format ending in .gz, a Python daemon
// stopped with SIGTERM leaves its newest log as its buffered writes left
// it: often empty (gzip.open's header still in the file buffer), or cut
// inside the 10-byte header. That is a torn tail like any other, not a
// reason to refuse the take-over.
func TestTornGzipLog(t *testing.T) {
	dir := t.TempDir()
	l, err := os.ReadFile(logAB)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(l)
	zw.Close()
	for name, data := range map[string][]byte{
		"log_empty.gz":  nil,
		"log_header.gz": gz.Bytes()[:5],
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, rep, err := Read(Source{Snapshot: snapA, Logs: []string{p}}, time.Now())
		if err != nil || len(rep.Torn) != 1 || rep.Torn[0] != (TornLog{p, 0}) || rep.Records != 0 {
			t.Errorf("%s as the newest log: %+v, %v; want a torn tail at 0", name, rep, err)
		}
		// Before another log too (a restarted daemon).
		_, rep, err = Read(Source{Snapshot: snapA, Logs: []string{p, logAB}}, time.Now())
		if err != nil || len(rep.Torn) != 1 || rep.Torn[0] != (TornLog{p, 0}) {
			t.Errorf("%s before another log: %+v, %v; want a torn tail at 0", name, rep, err)
		}
	}
}

// TestControlValuesAsPythonStoredThem: Python's control_work_spec stored
// weight, max_running and interval unconverted (a float weight schedules
// fine there), and unit priorities given as numeric strings likewise, so
// its snapshots hold them so. They are read as Python's int() and float()
// read them (docs/compat.md, control-values-converted), not refused.
func TestControlValuesAsPythonStoredThem(t *testing.T) {
	unit := map[string]any{"data": map[string]any{}, "status": 1, "priority": []byte("5"), "lease_time": nil, "worker_id": nil}
	spec := []any{
		map[string]any{"name": []byte("s"), "min_gb": 1},
		2.5, 1, false,
		[]any{[]any{[]byte("a"), unit}},
		map[int]int{},
		[]byte("30"), 0, 3.0,
	}
	b, err := cbor.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ReadSnapshot("snap", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("ReadSnapshot: %v", err)
	}
	sp := st.Specs["s"]
	if sp.Weight != 2 || sp.MaxRunning != coordinate.EncodeMaxRunning(3) || sp.Interval != 30 {
		t.Errorf("weight %d, max_running %d, interval %v; want 2, 3, 30", sp.Weight, sp.MaxRunning, sp.Interval)
	}
	if p := sp.Units["a"].Priority; p != 5 {
		t.Errorf("priority %v, want 5", p)
	}
}

// TestOddButValidPythonState: testdata/odd was written by the real Python
// daemon (gen.py, odd_state) holding what its clients could store and
// our daemon accepts too: a definition with a non-string key (set_work_spec
// takes any dictionary) and a spec whose `continuous` control_work_spec set
// to None (Python's truth value: not continuous). Both are imported, not
// refused.
func TestOddButValidPythonState(t *testing.T) {
	st := readSnap(t, "testdata/odd/snapshot_20250101_000001.000")
	if got := st.SpecNames(); !reflect.DeepEqual(got, []string{"cont", "intkey"}) {
		t.Fatalf("specs = %q", got)
	}
	if st.Specs["cont"].Continuous {
		t.Error("cont: continuous None read as true")
	}
	ik := st.Specs["intkey"]
	if len(ik.Units) != 1 || ik.Units["a"] == nil {
		t.Errorf("intkey units = %v", ik.Units)
	}
	ctx := context.Background()
	b := memory.New(memory.Options{})
	defer b.Close()
	ns, err := b.Namespace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, ns, st, false); err != nil {
		t.Fatalf("Load: %v", err)
	}
	ws, err := ns.WorkSpec(ctx, "intkey")
	if err != nil {
		t.Fatal(err)
	}
	var def map[any]any
	if err := cbor.Unmarshal(ws.Definition, &def); err != nil {
		t.Fatal(err)
	}
	if def[uint64(5)] == nil {
		t.Errorf("the definition lost its integer key: %v", def)
	}
}

// TestRestartedPythonDaemon: testdata/restart was written by the real
// Python daemon stopped by SIGTERM twice with no snapshot in between
// (gen.py restart_state). Each run's log ends inside a record, its last
// buffer never written, so a torn log before the newest is what a
// restart leaves, not damage: the complete records of both are replayed
// and each cut is reported.
func TestRestartedPythonDaemon(t *testing.T) {
	found, err := Locate("testdata/restart/snapshot_{timestamp}", "testdata/restart/log_{timestamp}")
	if err != nil {
		t.Fatal(err)
	}
	if found.Snapshot != "testdata/restart/snapshot_20250101_000001.000" || len(found.Logs) != 2 {
		t.Fatalf("Locate = %+v", found)
	}
	st, rep, err := Read(Source{Snapshot: found.Snapshot, Logs: found.Logs}, time.Now())
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(rep.Torn) != 2 || rep.Torn[0].File != found.Logs[0] || rep.Torn[1].File != found.Logs[1] {
		t.Errorf("torn logs reported: %+v", rep.Torn)
	}
	units := st.Specs["ws"].Units
	if units["a000"] == nil || units["b000"] == nil {
		t.Errorf("units of both runs not replayed: %d units", len(units))
	}
	if rep.Records != len(units) {
		t.Errorf("%d records replayed, %d units", rep.Records, len(units))
	}
}

// TestBlockedUnitRefusedByValue: the Python daemon let update_work_unit
// set a unit BLOCKED (2), which neither our daemon nor the import takes;
// the refusal names the unit and the status it has, not only "an integer".
func TestBlockedUnitRefusedByValue(t *testing.T) {
	unit := map[string]any{"data": map[string]any{}, "status": 2, "priority": 0, "lease_time": nil, "worker_id": nil}
	spec := []any{map[string]any{"name": []byte("s"), "min_gb": 1}, 20, 1, false,
		[]any{[]any{[]byte("u1"), unit}}, map[int]int{}, nil, 0, nil}
	b, err := cbor.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadSnapshot("snap", bytes.NewReader(b))
	if err == nil || !strings.Contains(err.Error(), `unit "u1": status must be 1, 3, 4 or 5, got 2 (BLOCKED)`) {
		t.Errorf("ReadSnapshot = %v, want the unit and its status 2 named", err)
	}
}

// tooBigState is snapshot B with one more unit in spec "flow" whose data
// is more than the memory backend puts in one import record
// (journal.MaxRecordSize/2): a persistent memory backend refuses that
// spec. The data is one CBOR byte string; only its head is ever written,
// so the pages behind it are never touched.
func tooBigState(t *testing.T) *State {
	t.Helper()
	st := readSnap(t, snapB)
	n := journal.MaxRecordSize/2 + 1
	data := make([]byte, n)
	data[0] = 0x5a // byte string, 4-byte length
	binary.BigEndian.PutUint32(data[1:5], uint32(n-5))
	key := coordinate.Name{Bytes: "huge", Text: true}
	st.Specs["flow"].Units[key.Bytes] = &Unit{Key: key, Data: data, Status: coordinate.StatusAvailable}
	return st
}

// TestLoadReplaceRefusedChangesNothing: import-python -replace with a
// state holding one spec the backend refuses fails and leaves the specs
// it was to replace as they were. (Load deleted them first, then the
// import failed: the operator lost the queue they meant to replace.)
func TestLoadReplaceRefusedChangesNothing(t *testing.T) {
	ctx := context.Background()
	b, err := memory.Open(ctx, memory.Options{Clock: coordinate.NewFakeClock(time.Unix(1e9, 0)), DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ns, err := b.Namespace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, ns, readSnap(t, snapA), false); err != nil {
		t.Fatal(err)
	}
	// Work done since the first import, which the failed replace must keep.
	if err := ns.UpdateWorkUnit(ctx, "flow", "f1", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		t.Fatal(err)
	}
	before := coordinatetest.Render(t, ns)
	_, err = Load(ctx, ns, tooBigState(t), true)
	if err == nil || !strings.Contains(err.Error(), `"flow"`) || !strings.Contains(err.Error(), "journal record") {
		t.Fatalf("Load -replace with a spec too large: %v, want a refusal naming spec flow", err)
	}
	if after := coordinatetest.Render(t, ns); after != before {
		t.Errorf("a refused Load -replace changed the backend:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// A namespace that neither imports in bulk nor checks imports gets the
// specs it replaces deleted before the import; if the import then fails
// for a reason no check could see, the error says they are gone.
func TestLoadReplaceFailingImportSaysWhatWasDeleted(t *testing.T) {
	ctx := context.Background()
	b := memory.New(memory.Options{Clock: coordinate.NewFakeClock(time.Unix(1e9, 0))})
	defer b.Close()
	ns, err := b.Namespace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, ns, readSnap(t, snapA), false); err != nil {
		t.Fatal(err)
	}
	fns := failingNS{ns, "tick"}
	if _, ok := coordinate.Namespace(fns).(coordinate.ImportChecker); ok {
		t.Fatal("failingNS checks imports")
	}
	_, err = Load(ctx, fns, readSnap(t, snapB), true)
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), `were deleted before: "flow", "paused"`) {
		t.Fatalf("Load -replace failing part way: %v, want the failure and the deleted specs", err)
	}
}
