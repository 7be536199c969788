package pyvalue

import (
	"math"
	"math/big"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// TestWireStr pins Python 2.7's str() of decoded wire values, as printed
// by the pyenv Python 2.7.18 interpreter (integers off the wire are longs).
func TestWireStr(t *testing.T) {
	bigPos, _ := new(big.Int).SetString("18446744073709551616", 10)
	bigNeg, _ := new(big.Int).SetString("-100000000000000000000", 10)
	for _, tc := range []struct {
		in   any
		want string
	}{
		{0.30000000000000004, "0.3"},     // str(0.1+0.2); repr is 0.30000000000000004
		{100000000000.0, "1e+11"},        // str(1e11)
		{99999999999.0, "99999999999.0"}, // below the threshold
		{1700000000.123456, "1700000000.12"},
		{math.Copysign(0, -1), "-0.0"},
		{math.Inf(1), "inf"},
		{math.NaN(), "nan"},
		{float32(0.5), "0.5"},
		{uint64(18446744073709551615), "18446744073709551615"}, // str(2**64-1), no L
		{int64(-9223372036854775808), "-9223372036854775808"},
		{*bigPos, "18446744073709551616"}, // str(2**64)
		{bigNeg, "-100000000000000000000"},
		{7, "7"},
		{true, "True"},
		{false, "False"},
		{nil, "None"},
		{[]byte("host-1"), "host-1"},
		{cbor.ByteString("k"), "k"},
		{"v\u00e9", "v\u00e9"}, // print of a unicode: its text
		// str([1L, 0.1+0.2, 'a', u'b', None, True, (1L,), {'k': 1e11}])
		{[]any{uint64(1), 0.30000000000000004, []byte("a"), "b", nil, true, Tuple{uint64(1)}, map[any]any{cbor.ByteString("k"): 1e11}},
			"[1L, 0.30000000000000004, 'a', u'b', None, True, (1L,), {'k': 100000000000.0}]"},
	} {
		if got := WireStr(tc.in); got != tc.want {
			t.Errorf("WireStr(%#v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
