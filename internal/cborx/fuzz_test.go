package cborx

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// The fuzz targets check this package against fxamacker/cbor, a complete
// and independently written decoder: whatever one accepts, the other must
// accept with the same length, and the readers must return what a generic
// decode returns.

// oracleLimits are the Limits the oracle's DecMode below enforces too.
// fxamacker checks the content of its built-in tags (0-3, 21-23), which
// this package leaves to its callers, so the fuzz policy refuses them.
var oracleLimits = Limits{
	MaxDepth: 16,
	MaxItems: 64,
	AllowTag: func(n uint64) bool { return n > 23 },
}

var oracle = func() cbor.DecMode {
	dm, err := cbor.DecOptions{
		MaxNestedLevels:  oracleLimits.MaxDepth + 1,
		MaxArrayElements: int(oracleLimits.MaxItems),
		MaxMapPairs:      int(oracleLimits.MaxItems),
		IndefLength:      cbor.IndefLengthAllowed,
		DupMapKey:        cbor.DupMapKeyQuiet,
		MapKeyByteString: cbor.MapKeyByteStringAllowed,
	}.DecMode()
	if err != nil {
		panic(err)
	}
	return dm
}()

// hasTag24OnNonBytes reports an item fxamacker accepts but Validate
// refuses on purpose: tag 24 around anything but a byte string. It looks
// for a tag 24 head in any of its encodings (0xD8 0x18 is the shortest,
// 0xD9 0x00 0x18 is as valid) at every offset, so bytes inside a string
// may count too: a false alarm only makes the check more lenient.
func hasTag24OnNonBytes(b []byte) bool {
	for i := range b {
		if b[i]>>5 != MajorTag {
			continue
		}
		h, err := ReadHead(b[i:])
		if err == nil && h.Arg == TagEmbedded && i+h.Size < len(b) && b[i+h.Size]>>5 != MajorBytes {
			return true
		}
	}
	return false
}

// policyRefusal reports whether Validate refused a well-formed item for
// a reason the oracle does not check or counts differently: a tag the
// policy refuses, tag 24 around a non-byte string, invalid UTF-8 text, or
// nesting (the oracle counts containers, Validate counts every item, so a
// refusal must at least be nested beyond what a shallower oracle takes).
func policyRefusal(item []byte, bad *MalformedError) bool {
	switch {
	case bad == nil:
		return false
	case strings.HasPrefix(bad.Reason, "unsupported CBOR tag"):
		return true
	case strings.HasPrefix(bad.Reason, "nesting deeper"):
		// fxamacker counts a run of tags (a tag on a tag) as one level,
		// this package counts each tag: a refusal is policy when either
		// count exceeds the limit.
		var raw cbor.RawMessage
		if shallowOracle.Unmarshal(item, &raw) != nil {
			return true
		}
		d, _ := depthCountingTags(item)
		return d > oracleLimits.MaxDepth
	}
	return hasTag24OnNonBytes(item) || badUTF8(item)
}

// depthCountingTags returns the nesting depth of the well-formed item at
// the start of b (0 for a scalar) counting arrays, maps and every tag as
// a level, and the item's length.
func depthCountingTags(b []byte) (depth, n int) {
	h, err := ReadHead(b)
	if err != nil {
		return 0, len(b)
	}
	pos := h.Size
	child := func() {
		d, m := depthCountingTags(b[pos:])
		depth = max(depth, d+1)
		pos += m
	}
	switch h.Major {
	case MajorArray, MajorMap:
		if h.Indefinite() {
			for pos < len(b) && b[pos] != Break {
				child()
			}
			return depth, pos + 1
		}
		items := h.Arg
		if h.Major == MajorMap {
			items *= 2
		}
		for range items {
			child()
		}
	case MajorTag:
		child()
	case MajorBytes, MajorText:
		if h.Indefinite() {
			for pos < len(b) && b[pos] != Break {
				_, m := depthCountingTags(b[pos:])
				pos += m
			}
			return 0, pos + 1
		}
		pos += int(h.Arg)
	}
	return depth, pos
}

var shallowOracle = func() cbor.DecMode {
	dm, err := cbor.DecOptions{
		MaxNestedLevels: oracleLimits.MaxDepth - 1,
		IndefLength:     cbor.IndefLengthAllowed,
	}.DecMode()
	if err != nil {
		panic(err)
	}
	return dm
}()

// badUTF8 asks the oracle whether a well-formed item holds invalid text:
// its RawMessage split does not look inside strings, its diagnostic
// notation does.
func badUTF8(item []byte) bool {
	_, err := diag.Diagnose(item)
	return err != nil && strings.Contains(err.Error(), "UTF-8")
}

var diag = func() cbor.DiagMode {
	dm, err := cbor.DiagOptions{MaxNestedLevels: 256}.DiagMode()
	if err != nil {
		panic(err)
	}
	return dm
}()

func seeds(f *testing.F) {
	for _, v := range []any{
		nil, true, 1, -1, uint64(1) << 40, 1.5, "text", []byte("bytes"),
		[]any{1, []byte("a"), map[string]any{"k": []any{}}},
		map[any]any{cbor.ByteString("id"): 1, "method": []byte("get_work"), 2: nil},
		cbor.Tag{Number: TagTuple, Content: []any{[]byte("k"), map[string]any{}}},
	} {
		b, err := cbor.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range [][]byte{
		{0x5F, 0x41, 'a', 0x41, 'b', 0xFF}, {0x7F, 0x61, 'x', 0xFF},
		{0x9F, 0x01, 0x9F, 0xFF, 0xFF}, {0xBF, 0x41, 'k', 0x01, 0xFF},
		{0xD8, 24, 0x43, 0xA1, 0x01, 0x02}, {0xF8, 0x10}, {0x1C}, {0xFF},
		{0x9B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, {0x62, 0xC3, 0x28},
	} {
		f.Add(s)
	}
}

// FuzzValidate compares Validate and Len with the oracle's idea of where
// the first item ends.
func FuzzValidate(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := oracleLimits.Validate(b)
		var raw cbor.RawMessage
		rest, oerr := oracle.UnmarshalFirst(b, &raw)
		if err == nil {
			if oerr != nil {
				t.Fatalf("Validate accepted % X (%d bytes), oracle: %v", b, n, oerr)
			}
			if n != len(b)-len(rest) {
				t.Fatalf("Validate says %d bytes, oracle %d, for % X", n, len(b)-len(rest), b)
			}
			if l, ok := Len(b); !ok || l != n {
				t.Fatalf("Len says %d %v, Validate %d, for % X", l, ok, n, b)
			}
			checkReaders(t, b[:n])
		} else {
			var bad *MalformedError
			if !errors.Is(err, ErrTruncated) && !errors.As(err, &bad) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if oerr == nil && !policyRefusal(b[:len(b)-len(rest)], bad) {
				t.Fatalf("Validate refused % X (%v), oracle accepted it", b, err)
			}
		}
		// Len checks structure only: whenever it accepts, the bytes are a
		// well-formed item as far as the structure goes, and it never
		// reads past b.
		if l, ok := Len(b); ok && (l <= 0 || l > len(b)) {
			t.Fatalf("Len %d out of range for %d bytes", l, len(b))
		}
	})
}

// checkReaders compares the readers with a generic decode of one valid
// item.
func checkReaders(t *testing.T, item []byte) {
	var v any
	if err := oracle.Unmarshal(item, &v); err != nil {
		return // e.g. a bignum too large for the generic decoder's types
	}
	if s, text, ok := StringValue(item); ok {
		switch want := v.(type) {
		case string:
			if !text || s != want {
				t.Fatalf("StringValue(% X) = %q %v, oracle %q", item, s, text, want)
			}
		case []byte:
			if text || s != string(want) {
				t.Fatalf("StringValue(% X) = %q %v, oracle %q", item, s, text, want)
			}
		default:
			t.Fatalf("StringValue accepted % X, oracle decoded %T", item, v)
		}
	}
	if n, ok := Int(item); ok {
		switch want := v.(type) {
		case uint64:
			if n < 0 || uint64(n) != want {
				t.Fatalf("Int(% X) = %d, oracle %d", item, n, want)
			}
		case int64:
			if n != want {
				t.Fatalf("Int(% X) = %d, oracle %d", item, n, want)
			}
		default:
			t.Fatalf("Int accepted % X, oracle decoded %T", item, v)
		}
	}
	if elems, h, ok := Elements(nil, item); ok {
		var want []cbor.RawMessage
		if h.Major == MajorArray {
			if err := oracle.Unmarshal(item, &want); err != nil {
				t.Fatalf("Elements accepted % X, oracle: %v", item, err)
			}
		} else {
			// A map's entries in encoded order: decode as an array of
			// alternating keys and values by rewriting the major type.
			if !EachPair(item, func(k, v []byte) { want = append(want, k, v) }) {
				t.Fatalf("EachPair refused the map % X that Elements read", item)
			}
			var m map[any]cbor.RawMessage
			if err := oracle.Unmarshal(item, &m); err != nil {
				return // e.g. an unhashable key
			}
		}
		if len(elems) != len(want) {
			t.Fatalf("Elements(% X) = %d items, want %d", item, len(elems), len(want))
		}
		for i := range elems {
			got := elems[i]
			if h.Major == MajorArray {
				got = withoutSelfDescribed(got)
			}
			if !bytes.Equal(got, want[i]) {
				t.Fatalf("Elements(% X)[%d] = % X, want % X", item, i, elems[i], want[i])
			}
		}
		if h.Major == MajorMap {
			pairs, _ := Pairs(item)
			again := AppendMap(nil, pairs)
			var a, b2 any
			if oracle.Unmarshal(again, &a) != nil || oracle.Unmarshal(item, &b2) != nil {
				t.Fatalf("AppendMap(Pairs(% X)) = % X is not decodable", item, again)
			}
		}
	}
}

// withoutSelfDescribed returns item without the self-described CBOR
// tags (55799) at its start. The oracle drops them wherever it decodes a
// value, even into a cbor.RawMessage, while Elements returns each element
// as encoded, tag included.
func withoutSelfDescribed(item []byte) []byte {
	for {
		h, err := ReadHead(item)
		if err != nil || h.Major != MajorTag || h.Arg != 55799 {
			return item
		}
		item = item[h.Size:]
	}
}

// FuzzAppendHead checks the shortest head encoding and ReadHead against
// the oracle's encoder for every major type and argument.
func FuzzAppendHead(f *testing.F) {
	for _, a := range []uint64{0, 23, 24, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, 1<<64 - 1} {
		f.Add(byte(MajorUint), a)
		f.Add(byte(MajorArray), a)
	}
	f.Fuzz(func(t *testing.T, major byte, arg uint64) {
		major &= 7
		if major == MajorSimple {
			return // simple values and floats have their own encodings
		}
		got := AppendHead(nil, major, arg)
		// The oracle encodes arg as an unsigned integer; the head of any
		// other major type differs only in its top three bits.
		want, err := cbor.Marshal(arg)
		if err != nil {
			t.Fatal(err)
		}
		want[0] = want[0]&0x1f | major<<5
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendHead(%d, %d) = % X, want % X", major, arg, got, want)
		}
		h, err := ReadHead(got)
		if err != nil || h.Major != major || h.Arg != arg || h.Size != len(got) || HeadSize(got[0]) != len(got) {
			t.Fatalf("ReadHead(% X) = %+v, %v", got, h, err)
		}
	})
}
