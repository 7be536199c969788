package memory

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
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

// CheckImport refuses what ImportWorkSpec refuses for the input alone,
// with the same error, and changes nothing: a spec larger than one
// journal record with a data directory, and nothing more without one.
func TestCheckImport(t *testing.T) {
	ctx := context.Background()
	n := maxImportRecord + 1
	data := make([]byte, n) // only its head is written: the pages stay untouched
	data[0] = 0x5a          // byte string, 4-byte length
	binary.BigEndian.PutUint32(data[1:5], uint32(n-5))
	in := &coordinate.ImportedWorkSpec{
		Definition: []byte{0xa1, 0x44, 'n', 'a', 'm', 'e', 0x41, 's'}, // {b"name": b"s"}
		Units:      []coordinate.ImportedWorkUnit{{Key: coordinate.Name{Bytes: "big"}, Data: data, Status: coordinate.StatusAvailable}},
	}
	b, err := Open(ctx, Options{Clock: coordinate.NewFakeClock(time.Unix(1e9, 0)), DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ns, err := b.Namespace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	checkErr := ns.(coordinate.ImportChecker).CheckImport(in)
	if checkErr == nil || !strings.Contains(checkErr.Error(), "journal record") {
		t.Fatalf("CheckImport of a spec too large: %v", checkErr)
	}
	if err := ns.ImportWorkSpec(ctx, in); err == nil || err.Error() != checkErr.Error() {
		t.Errorf("ImportWorkSpec: %v\nCheckImport: %v", err, checkErr)
	}
	bad := &coordinate.ImportedWorkSpec{Definition: coordinate.Null}
	if err := ns.(coordinate.ImportChecker).CheckImport(bad); !errors.Is(err, coordinate.ErrInvalidWorkSpec) {
		t.Errorf("CheckImport of a bad definition: %v, want ErrInvalidWorkSpec", err)
	}
	if specs, _, _ := ns.ListWorkSpecs(ctx, "", 0); len(specs) != 0 {
		t.Errorf("%d specs after refused imports", len(specs))
	}
	// Without a journal there is no record to fit in.
	vol := New(Options{Clock: coordinate.NewFakeClock(time.Unix(1e9, 0))})
	defer vol.Close()
	vns, err := vol.Namespace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := vns.(coordinate.ImportChecker).CheckImport(in); err != nil {
		t.Errorf("CheckImport without a data directory: %v", err)
	}
}
