package memory

import (
	"encoding/hex"
	"os"
	"reflect"
	"strings"
	"testing"
)

// goldenImport is an import record's op: a spec with one unit of each kind
// of worker field.
var goldenImport = &opImportWorkSpec{
	Definition: []byte{0xa1, 0x44, 'n', 'a', 'm', 'e', 0x41, 's'}, // {b"name": b"s"}
	Paused:     true,
	Continuous: false,
	Interval:   90e9,
	NextCont:   1735689600e9,
	MaxRunning: -1,
	Weight:     3,
	Finished:   4,
	Failed:     2,
	Units: []importedUnit{
		{Key: "a", KeyText: true, Data: []byte{0xa0}, Status: 1, Priority: 2.5},
		{Key: "p", Data: []byte{0xf6}, Status: 3, Priority: -1, Expiration: 1735689660e9, HasWorker: true, Worker: "w", WorkerText: true},
	},
}

// TestImportRecordGolden pins the journal record of ImportWorkSpec
// (kind 16, testdata/import_record.hex): records written by this version
// must stay readable, so a change to opImportWorkSpec that changes the
// bytes needs a new record kind, not an edit of this file.
func TestImportRecordGolden(t *testing.T) {
	var enc recordEncoder
	rec, err := enc.encode("ns", goldenImport)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("testdata/import_record.hex")
	if err != nil {
		t.Fatal(err)
	}
	want, err := hex.DecodeString(strings.TrimSpace(string(golden)))
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(rec); got != hex.EncodeToString(want) {
		t.Errorf("import record changed:\n got %s\nwant %x", got, want)
	}
	// The import record's layout is the same in record formats 1 and 2.
	for _, format := range []uint32{0, recordFormat} {
		d, err := decodeRecord(want, format)
		if err != nil {
			t.Fatal(err)
		}
		if d.namespace != "ns" || !reflect.DeepEqual(d.op, goldenImport) {
			t.Errorf("golden record decodes to %q %+v in format %d", d.namespace, d.op, format)
		}
	}
}
