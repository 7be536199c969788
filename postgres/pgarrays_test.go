package postgres

import (
	"bytes"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestFastArraysEncodeAsPgx: every slice fastArrays encodes itself comes
// out byte for byte as pgx's own codec writes it, NULL elements, empty
// elements and empty arrays included; other values still go to pgx's.
func TestFastArraysEncodeAsPgx(t *testing.T) {
	seven, minus := int64(7), int64(-1<<40)
	cases := []struct {
		name  string
		oid   uint32
		value any
	}{
		{"bytea", pgtype.ByteaArrayOID, [][]byte{[]byte("spec"), {}, nil, []byte{0, 0xff, 3}}},
		{"bytea no nulls", pgtype.ByteaArrayOID, [][]byte{[]byte("a"), []byte("bc")}},
		{"bytea empty", pgtype.ByteaArrayOID, [][]byte{}},
		{"int8", pgtype.Int8ArrayOID, []int64{0, 1, -1, 1 << 62, -1 << 63}},
		{"int8 empty", pgtype.Int8ArrayOID, []int64{}},
		{"nullable int8", pgtype.Int8ArrayOID, []*int64{&seven, nil, &minus}},
		{"nullable int8 no nulls", pgtype.Int8ArrayOID, []*int64{&seven}},
		{"int4", pgtype.Int4ArrayOID, []int32{0, 5, -7, 1<<31 - 1}},
		{"bool", pgtype.BoolArrayOID, []bool{true, false, true}},
		{"bool empty", pgtype.BoolArrayOID, []bool{}},
		{"not ours: int16s as int4", pgtype.Int4ArrayOID, []int16{1, -2}},
		{"not ours: ints as int8", pgtype.Int8ArrayOID, []int{1, 2}},
	}
	fast := pgtype.NewMap()
	registerFastArrays(fast)
	plain := pgtype.NewMap()
	for _, c := range cases {
		want, werr := plain.Encode(c.oid, pgtype.BinaryFormatCode, c.value, nil)
		got, gerr := fast.Encode(c.oid, pgtype.BinaryFormatCode, c.value, nil)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Errorf("%s: fast encoding %x (err %v), pgx's %x (err %v)", c.name, got, gerr, want, werr)
		}
		// Appending to a buffer that holds something keeps it.
		got, _ = fast.Encode(c.oid, pgtype.BinaryFormatCode, c.value, []byte("pre"))
		if werr == nil && !bytes.Equal(got, append([]byte("pre"), want...)) {
			t.Errorf("%s: appended to a buffer: %x", c.name, got)
		}
	}
	// Strings go as bytea, exactly as the same bytes would.
	strs, _ := fast.Encode(pgtype.ByteaArrayOID, pgtype.BinaryFormatCode, []string{"spec", "", "\x00\xff"}, nil)
	want, _ := plain.Encode(pgtype.ByteaArrayOID, pgtype.BinaryFormatCode, [][]byte{[]byte("spec"), {}, {0, 0xff}}, nil)
	if !bytes.Equal(strs, want) {
		t.Errorf("strings as bytea: %x, want %x", strs, want)
	}
	for _, c := range cases[:len(cases)-2] {
		if _, ok := fast.PlanEncode(c.oid, pgtype.BinaryFormatCode, c.value).(interface{ fastArray() }); !ok {
			t.Errorf("%s: encoded by pgx's codec, not fastArrays", c.name)
		}
	}
	// Decoding is pgx's.
	var keys [][]byte
	enc, _ := fast.Encode(pgtype.ByteaArrayOID, pgtype.BinaryFormatCode, [][]byte{[]byte("k")}, nil)
	if err := fast.Scan(pgtype.ByteaArrayOID, pgtype.BinaryFormatCode, enc, &keys); err != nil || len(keys) != 1 || string(keys[0]) != "k" {
		t.Errorf("scan of a bytea array: %q, %v", keys, err)
	}
}
