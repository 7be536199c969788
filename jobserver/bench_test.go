package jobserver

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
)

// BenchmarkGetWorkFinish measures the worker's hot path through the RPC
// layer on the memory backend: get_work for one unit, then finishing it.
// Requests are built outside the timed region, so only Handle is measured.
func BenchmarkGetWorkFinish(b *testing.B) {
	js, _ := newMemoryServer(b, Config{})
	ctx := context.Background()
	mustHandle := func(req *cborrpc.Request) cbor.RawMessage {
		res, err := js.Handle(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		raw, err := cborrpc.EncMode().Marshal(res)
		if err != nil {
			b.Fatal(err)
		}
		return raw
	}
	mustHandle(request(b, "set_work_spec", m{"name": []byte("ws")}))
	const batch = 1000
	items := make([]any, batch)
	keys := make([][]byte, batch)
	finishes := make([]*cborrpc.Request, batch)
	finish := m{"status": 4}
	// add queues one round of units; get_work hands them out in key order,
	// so keys[i] is the i-th unit leased.
	add := func(round int) {
		for i := range items {
			keys[i] = []byte(fmt.Sprintf("u%09d-%04d", round, i))
			items[i] = tuple{keys[i], m{"n": i}}
			finishes[i] = request(b, "update_work_unit", []byte("ws"), keys[i], finish)
		}
		mustHandle(request(b, "add_work_units", []byte("ws"), items))
	}
	getWork := request(b, "get_work", []byte("w"), m{"lease_time": 900, "max_jobs": 1})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%batch == 0 {
			b.StopTimer()
			add(i / batch)
			b.StartTimer()
		}
		res, err := js.Handle(ctx, getWork)
		if err != nil {
			b.Fatal(err)
		}
		if raw, isRaw := res.(cbor.RawMessage); !isRaw || !bytes.Contains(raw, keys[i%batch]) {
			b.Fatalf("get_work returned %#v, want unit %s", res, keys[i%batch])
		}
		res, err = js.Handle(ctx, finishes[i%batch])
		if err != nil {
			b.Fatal(err)
		}
		if raw, isRaw := res.(cbor.RawMessage); !isRaw || !bytes.Equal(raw, okEncoded) {
			b.Fatalf("update_work_unit returned %#v", res)
		}
	}
}

// okEncoded is (True, None) as the wire encoder writes it.
var okEncoded = func() []byte {
	raw, err := cborrpc.EncMode().Marshal(tuple{true, nil})
	if err != nil {
		panic(err)
	}
	return raw
}()

// BenchmarkAddWorkUnits measures add_work_units of 1000 small units (the
// load generator's batch) through Handle, each batch into a fresh spec
// so the backend's index stays the same size.
func BenchmarkAddWorkUnits(b *testing.B) {
	js, _ := newMemoryServer(b, Config{})
	ctx := context.Background()
	const batch = 1000
	items := make([]any, batch)
	for i := range items {
		items[i] = tuple{[]byte(fmt.Sprintf("u%08d", i)), m{"i": i, "pad": make([]byte, i%49)}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		spec := []byte(fmt.Sprintf("ws%d", i))
		if _, err := js.Handle(ctx, request(b, "set_work_spec", m{"name": spec})); err != nil {
			b.Fatal(err)
		}
		add := request(b, "add_work_units", spec, items)
		b.StartTimer()
		res, err := js.Handle(ctx, add)
		if err != nil {
			b.Fatal(err)
		}
		if raw, isRaw := res.(cbor.RawMessage); !isRaw || !bytes.Equal(raw, okEncoded) {
			b.Fatalf("add_work_units returned %#v", res)
		}
	}
}
