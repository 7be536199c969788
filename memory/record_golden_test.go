package memory

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/fxamacker/cbor/v2"
)

// updateGolden rewrites the golden files of the current formats:
// go test ./memory -run Golden -update. Never for an old format: those
// files are what old data directories hold.
var updateGolden = flag.Bool("update", false, "rewrite the golden files of the current record and snapshot formats")

// goldenRecord is one record of each kind, every field set.
type goldenRecord struct {
	name string
	ns   string
	op   op // nil: the namespace record
}

func goldenRecords() []goldenRecord {
	f := func(v float64) *float64 { return &v }
	b := func(v bool) *bool { return &v }
	d := func(v time.Duration) *time.Duration { return &v }
	i := func(v int) *int { return &v }
	w := coordinate.Name{Bytes: "worker-1", Text: true}
	return []goldenRecord{
		{"01-namespace", "ns", nil},
		{"02-set-work-spec", "ns", &opSetWorkSpec{Definition: []byte{0xa1, 0x44, 'n', 'a', 'm', 'e', 0x41, 's'}}},
		{"03-control-work-spec", "ns", &opControlWorkSpec{Spec: "s", Control: coordinate.WorkSpecControl{
			Paused: b(true), Continuous: b(false), Interval: d(3 * time.Second), MaxRunning: i(4), Weight: i(20)}}},
		{"04-delete-work-spec", "ns", &opDeleteWorkSpec{Spec: "s", Now: 1700000000000000001}},
		{"05-clear", "", &opClear{}},
		{"06-add-work-units", "ns", &opAddWorkUnits{Spec: "s", Now: 1700000000000000002, Units: []coordinate.WorkUnitInput{
			{Key: coordinate.Name{Bytes: "k1", Text: true}, Data: coordinate.EmptyMap, Priority: f(2.5), Delay: time.Minute,
				DependsOn: []coordinate.UnitRef{{Spec: "p", Key: "k0"}}, Group: "g"},
			{Key: coordinate.Name{Bytes: "\xff\x00"}, Data: coordinate.Null},
		}}},
		{"07-prioritize-work-units", "ns", &opPrioritizeWorkUnits{Spec: "s", Keys: []string{"k1", "k2"}, Priority: f(-1), Adjustment: 0.5}},
		{"08-delete-work-units", "ns", &opDeleteWorkUnits{Spec: "s", Now: 1700000000000000003, Query: coordinate.DeleteQuery{
			Keys: []string{"k1"}, Statuses: []coordinate.Status{coordinate.StatusFinished, coordinate.StatusFailed}}}},
		{"09-update-work-unit", "ns", &opUpdateWorkUnit{Spec: "s", Key: "k1", Now: 1700000000000000004, LeaseID: 7,
			Update: coordinate.WorkUnitUpdate{Status: coordinate.StatusPending, LeaseTime: d(90 * time.Second), Data: []byte{0xa0}, Worker: &w}}},
		{"10-expire", "ns", &opExpire{Now: 1700000000000000005}},
		{"11-get-work", "ns", &opGetWork{Now: 1700000000000000006, Worker: w, Lease: 5 * time.Minute, Spec: "s",
			Count: 2, Continuous: false, Keys: []string{"k1", "k2"}, FirstLeaseID: 8}},
		{"12-archive", "ns", &opArchive{Now: 1700000000000000007, Specs: []string{"s"},
			Policy: coordinate.RetentionPolicy{MaxCount: 100, MaxAge: time.Hour}}},
		{"13-heartbeat", "ns", &opHeartbeat{Now: 1700000000000000008, Heartbeat: coordinate.Heartbeat{
			Worker: w, Mode: []byte{0x64, 'i', 'd', 'l', 'e'}, Data: []byte{0xa0}, Parent: &coordinate.Name{Bytes: "parent"}, Expire: time.Minute}}},
		{"14-unregister-worker", "ns", &opUnregisterWorker{Worker: "worker-1"}},
		{"15-cancel-group", "ns", &opCancelGroup{Group: "g", Now: 1700000000000000009}},
		{"16-drop-units", "ns", &opDropUnits{Spec: "s", Now: 1700000000000000010, Keys: []string{"k1", "\xff\x00"}, Archive: true,
			Forget: []coordinate.Status{coordinate.StatusFinished, coordinate.StatusFailed}}},
	}
}

func goldenPath(format, name string) string {
	return filepath.Join("testdata", "records-"+format, name+".bin")
}

// TestRecordGoldenCurrent pins the bytes of every record kind in the
// current format: a change to a record type (or to an API type leaking
// into one) fails here.
func TestRecordGoldenCurrent(t *testing.T) {
	var enc recordEncoder
	for _, g := range goldenRecords() {
		t.Run(g.name, func(t *testing.T) {
			rec, err := enc.encode(g.ns, g.op)
			if err != nil {
				t.Fatal(err)
			}
			path := goldenPath("v2", g.name)
			if *updateGolden {
				writeGolden(t, path, rec)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rec, want) {
				t.Fatalf("record bytes changed (a format change needs a new version and a reader for this one):\n got %x\nwant %x", rec, want)
			}
			checkDecodes(t, want, recordFormat, g)
		})
	}
}

// TestRecordGoldenV1 reads records as format 1 (before records had their
// own types) wrote them, so existing data directories still load.
func TestRecordGoldenV1(t *testing.T) {
	for _, g := range goldenRecords() {
		if addedInFormat2[g.name] {
			continue
		}
		t.Run(g.name, func(t *testing.T) {
			rec, err := os.ReadFile(goldenPath("v1", g.name))
			if err != nil {
				t.Fatal(err)
			}
			checkDecodes(t, rec, 0, g)
		})
	}
}

// addedInFormat2 are the record kinds added to format 2 after it was
// first written: format 1 never held them.
var addedInFormat2 = map[string]bool{"16-drop-units": true}

func checkDecodes(t *testing.T, rec []byte, format uint32, g goldenRecord) {
	t.Helper()
	d, err := decodeRecord(rec, format)
	if err != nil {
		t.Fatalf("decoding: %v", err)
	}
	if d.namespace != g.ns || !reflect.DeepEqual(d.op, g.op) {
		t.Fatalf("decoded %q %#v, want %q %#v", d.namespace, d.op, g.ns, g.op)
	}
}

func writeGolden(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A record with a field this build does not know is rejected, never
// replayed with the field dropped.
func TestRecordRejectsUnknownFields(t *testing.T) {
	head := []byte{recUpdateWorkUnit, 2, 'n', 's'}
	body := func(v any) []byte {
		b, err := cbor.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return append(append([]byte(nil), head...), b...)
	}
	update := []any{"s", "k", 1, []any{2, nil, nil, nil}, 0}
	if _, err := decodeRecord(body(update), recordFormat); err != nil {
		t.Fatalf("the well-formed record: %v", err)
	}
	for name, rec := range map[string][]byte{
		"extra top-level field": body(append(update[:5:5], 9)),
		"extra nested field":    body([]any{"s", "k", 1, []any{2, nil, nil, nil, 9}, 0}),
		"missing field":         body(update[:4]),
		"trailing bytes":        append(body(update), 0),
	} {
		if _, err := decodeRecord(rec, recordFormat); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}

	v1 := map[string]any{"Status": 2, "LeaseTime": nil, "Data": nil, "Worker": nil}
	if _, err := decodeRecord(body([]any{"s", "k", 1, v1, 0}), 0); err != nil {
		t.Fatalf("the well-formed format 1 record: %v", err)
	}
	v1["Renamed"] = 1
	if _, err := decodeRecord(body([]any{"s", "k", 1, v1, 0}), 0); err == nil {
		t.Error("format 1 record with an unknown field name decoded without error")
	}
	delete(v1, "Renamed")
	if _, err := decodeRecord(body([]any{"s", "k", 1, v1, 0}), 7); err == nil {
		t.Error("a record format this build does not know decoded without error")
	}
}
