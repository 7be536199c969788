package memory

import (
	"fmt"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// benchRecordOps are the records of the hot paths: a lease, a finish and
// an add of 100 units.
func benchRecordOps() map[string]op {
	units := make([]coordinate.WorkUnitInput, 100)
	for i := range units {
		units[i] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("unit-%06d", i), Text: true}, Data: coordinate.EmptyMap}
	}
	return map[string]op{
		"getwork": &opGetWork{Now: 1_700_000_000_000_000_000, Worker: coordinate.Name{Bytes: "worker-17", Text: true},
			Lease: 5 * time.Minute, Spec: "spec", Count: 1, Keys: []string{"unit-000042"}, FirstLeaseID: 99},
		"finish": &opUpdateWorkUnit{Spec: "spec", Key: "unit-000042", Now: 1_700_000_000_000_000_001, LeaseID: 99,
			Update: coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}},
		"add100": &opAddWorkUnits{Spec: "spec", Now: 1_700_000_000_000_000_002, Units: units},
	}
}

func BenchmarkRecordEncode(b *testing.B) {
	for _, name := range []string{"getwork", "finish", "add100"} {
		o := benchRecordOps()[name]
		b.Run(name, func(b *testing.B) {
			var enc recordEncoder
			b.ReportAllocs()
			for b.Loop() {
				if _, err := enc.encode("ns", o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRecordDecode(b *testing.B) {
	for _, name := range []string{"getwork", "finish", "add100"} {
		var enc recordEncoder
		rec, err := enc.encode("ns", benchRecordOps()[name])
		if err != nil {
			b.Fatal(err)
		}
		rec = append([]byte(nil), rec...)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeRecord(rec, recordFormat); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
