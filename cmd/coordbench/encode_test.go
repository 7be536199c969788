package main

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/internal/cborx"
)

// The hand-encoded add_work_units items must be byte for byte what the
// general encoder makes of the same values.
func TestAppendUnitMatchesEncoder(t *testing.T) {
	pad := bytes.Repeat([]byte{0}, 48)
	for _, c := range []struct{ i, size int }{{0, 0}, {7, 23}, {12345, 24}, {99999999, 48}, {123456789, 1}} {
		want := mustEncode(cborrpc.Tuple{[]byte(fmt.Sprintf("u%08d", c.i)), opts{"i": c.i, "pad": pad[:c.size]}})
		if got := appendUnit(nil, c.i, pad[:c.size]); !bytes.Equal(got, want) {
			t.Errorf("appendUnit(%d, %d bytes) = % x\nwant % x", c.i, c.size, got, want)
		}
	}
}

func TestEncodeUnitsBatches(t *testing.T) {
	b := &bench{seed: 1}
	batches := b.encodeUnits(2*addBatch + 5)
	if len(batches) != 3 {
		t.Fatalf("%d batches, want 3", len(batches))
	}
	seen := map[string]bool{}
	for i, batch := range batches {
		items, isTuple, ok := listElements(batch)
		if !ok || isTuple {
			t.Fatalf("batch %d is not a list", i)
		}
		if want := min(addBatch, 2*addBatch+5-i*addBatch); len(items) != want {
			t.Errorf("batch %d has %d items, want %d", i, len(items), want)
		}
		for _, it := range items {
			pair, _, ok := listElements(it)
			if !ok || len(pair) != 2 {
				t.Fatalf("item %x is not a pair", []byte(it))
			}
			key, _, _ := cborx.String(pair[0])
			if seen[string(key)] {
				t.Errorf("key %s sent twice", key)
			}
			seen[string(key)] = true
		}
	}
	if len(seen) != 2*addBatch+5 {
		t.Errorf("%d distinct keys, want %d", len(seen), 2*addBatch+5)
	}
}
