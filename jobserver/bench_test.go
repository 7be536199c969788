package jobserver

import (
	"context"
	"fmt"
	"testing"

	"coordinated/cborrpc"
)

// BenchmarkGetWorkFinish measures the worker's hot path through the RPC
// layer on the memory backend: get_work for one unit, then finishing it.
func BenchmarkGetWorkFinish(b *testing.B) {
	js, _ := newMemoryServer(b, Config{})
	ctx := context.Background()
	mustHandle := func(req *cborrpc.Request) any {
		res, err := js.Handle(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	mustHandle(request(b, "set_work_spec", m{"name": []byte("ws")}))
	const batch = 1000
	items := make([]any, batch)
	add := func(round int) {
		for i := range items {
			items[i] = tuple{[]byte(fmt.Sprintf("u%09d-%04d", round, i)), m{"n": i}}
		}
		mustHandle(request(b, "add_work_units", []byte("ws"), items))
	}
	getWork := request(b, "get_work", []byte("w"), m{"lease_time": 900, "max_jobs": 1})
	finish := m{"status": 4}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%batch == 0 {
			b.StopTimer()
			add(i / batch)
			b.StartTimer()
		}
		res := mustHandle(getWork).(cborrpc.Tuple)
		triple := res[0].(cborrpc.Tuple)
		key := triple[1].([]byte)
		mustHandle(request(b, "update_work_unit", []byte("ws"), key, finish))
	}
}
