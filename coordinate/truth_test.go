package coordinate

import (
	"encoding/hex"
	"testing"

	"github.com/coordinated/coordinated/internal/cborx"
)

// The truth of values as the Python daemon sees them: each want is what
// Python 2.7 prints for bool() of the item decoded by coordinate 0.1.5's
// CBOR tag mapper (.venv-py27), which decodes embedded CBOR (tag 24) in
// place. Items Python refuses to decode (the "error" rows) are malformed:
// false.
func TestTruthy(t *testing.T) {
	tests := []struct {
		hex  string
		want bool
		py   string // the value in Python
	}{
		{"f5", true, "True"}, {"f4", false, "False"},
		{"f6", false, "None"}, {"f7", false, "None (undefined)"}, {"", false, "absent"},
		{"00", false, "0"}, {"01", true, "1"}, {"20", true, "-1"},
		{"1bffffffffffffffff", true, "2**64-1"}, {"3bffffffffffffffff", true, "-2**64"},
		{"c24101", true, "1L (bignum)"}, {"c34100", true, "-1L (negative bignum)"}, {"c340", true, "-1L"},
		{"fb0000000000000000", false, "0.0"}, {"fb8000000000000000", false, "-0.0"},
		{"f90000", false, "0.0 (half)"}, {"f98000", false, "-0.0 (half)"},
		{"fa00000000", false, "0.0 (single)"}, {"fa80000000", false, "-0.0 (single)"},
		{"fb7ff8000000000000", true, "nan"}, {"f97e00", true, "nan (half)"},
		{"f93c00", true, "1.0"}, {"fb7ff0000000000000", true, "inf"},
		{"60", false, "u''"}, {"6178", true, "u'x'"}, {"40", false, "''"}, {"4100", true, "'\\x00'"},
		{"7fff", false, "u'' (indefinite)"}, {"7f60ff", false, "u'' (one empty chunk)"}, {"7f6178ff", true, "u'x' (chunked)"},
		{"5fff", false, "'' (indefinite)"}, {"5f40ff", false, "'' (one empty chunk)"}, {"5f4100ff", true, "'\\x00' (chunked)"},
		{"80", false, "[]"}, {"8100", true, "[0]"}, {"9fff", false, "[] (indefinite)"}, {"9f00ff", true, "[0] (indefinite)"},
		{"a0", false, "{}"}, {"a10000", true, "{0: 0}"}, {"bfff", false, "{} (indefinite)"}, {"bf0000ff", true, "{0: 0} (indefinite)"},
		{"d88080", false, "()"}, {"d8808100", true, "(0,)"}, {"d8809fff", false, "() (indefinite)"},
		{"d88060", false, "tuple(u'') == ()"}, {"d8806178", true, "tuple(u'x')"},
		{"c240", false, "0L (bignum, no bytes)"}, {"c24100", false, "0L (bignum)"}, {"c2420000", false, "0L (bignum, two zero bytes)"},
		{"c25f4000ff", false, "error (chunked bignum)"}, {"c25f404101ff", false, "error (chunked bignum)"},
		{"c24201", false, "error (truncated bignum)"}, {"c26100", false, "error (text bignum)"},
		{"d8184101", true, "1 (embedded CBOR)"}, {"d8184100", false, "0 (embedded CBOR)"},
		{"d81841f4", false, "False (embedded)"}, {"d81841f6", false, "None (embedded)"}, {"d81841f5", true, "True (embedded)"},
		{"d8184180", false, "[] (embedded)"}, {"d8184160", false, "u'' (embedded)"}, {"d81841a0", false, "{} (embedded)"},
		{"d818426178", true, "u'x' (embedded)"}, {"d81843c24100", false, "0L (embedded bignum)"},
		{"d81844d8184100", false, "0 (embedded twice)"}, {"d81844d8184101", true, "1 (embedded twice)"},
		{"d81840", false, "error (embedded nothing)"}, {"d8186100", false, "error (embedded text)"},
		{"d8185f4100ff", false, "0 (embedded, chunked)"},
		{"d825500123456789abcdef0123456789abcdef", true, "UUID(...)"},
	}
	for _, tc := range tests {
		d, err := hex.DecodeString(tc.hex)
		if err != nil {
			t.Fatal(err)
		}
		if got := Truthy(d); got != tc.want {
			t.Errorf("truth of %s (%s in Python) = %v, Python says %v", tc.hex, tc.py, got, tc.want)
		}
	}
}

// embedTrue wraps the item 1 in tag 24 n times.
func embedTrue(n int) []byte {
	d := []byte{0x01}
	for i := 0; i < n; i++ {
		d = cborx.AppendBytes([]byte{0xd8, 0x18}, d)
	}
	return d
}

// Embedded CBOR is followed to a bounded depth: deeper nesting is
// malformed, not a stack overflow.
func TestTruthyEmbeddingDepth(t *testing.T) {
	if !Truthy(embedTrue(maxEmbedding)) {
		t.Errorf("1 embedded %d times is false", maxEmbedding)
	}
	if Truthy(embedTrue(maxEmbedding + 1)) {
		t.Errorf("1 embedded %d times is true: nesting is not bounded", maxEmbedding+1)
	}
}
