package coordinate

import (
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// The decoding paths of the shared rules: a work-spec definition, an
// add_work_units meta map and a chained `output` list, as a Python client
// encodes them (byte-string keys).

func benchItem(b *testing.B, v any) Data {
	b.Helper()
	raw, err := cbor.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

func BenchmarkParseWorkSpec(b *testing.B) {
	def := benchItem(b, map[string]any{
		"name": []byte("ws1"), "min_gb": 1, "priority": 10, "max_retries": 3,
		"nice": 0, "then": []byte("ws2"), "config": map[string]any{"a": 1},
	})
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseWorkSpec(def); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseUnitMeta(b *testing.B) {
	meta := benchItem(b, map[string]any{
		"priority": 5, "delay": 0.5,
		"depends_on": []any{[]any{[]byte("ws1"), []byte("u1")}, []any{[]byte("ws1"), []byte("u2")}},
	})
	b.ReportAllocs()
	for b.Loop() {
		var in WorkUnitInput
		if err := ParseUnitMeta(meta, &in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChainedUnits(b *testing.B) {
	out := make([]any, 20)
	for i := range out {
		out[i] = []any{[]byte("child"), map[string]any{"i": i}}
	}
	data := benchItem(b, map[string]any{"output": out, "other": []byte("x")})
	b.ReportAllocs()
	for b.Loop() {
		if len(ChainedUnits(data, 0)) != 20 {
			b.Fatal("wrong count")
		}
	}
}
