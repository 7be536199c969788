package coordinate

import (
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// enc encodes v as CBOR for test inputs. Use cbor.ByteString for byte
// strings that must be map keys, []byte for byte-string values, and tuple
// for tag-128 arrays.
func enc(t *testing.T, v any) Data {
	t.Helper()
	em, err := cbor.EncOptions{Sort: cbor.SortCanonical}.EncMode()
	if err != nil {
		t.Fatal(err)
	}
	b, err := em.Marshal(v)
	if err != nil {
		t.Fatalf("encode %#v: %v", v, err)
	}
	return b
}

func tuple(items ...any) cbor.Tag { return cbor.Tag{Number: 128, Content: items} }

func fp(f float64) *float64 { return &f }
