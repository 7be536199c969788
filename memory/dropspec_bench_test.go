package memory

import (
	"fmt"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// BenchmarkDeleteSpec times deleting a spec of n units (queueSizes, or
// COORD_BENCH_UNITS), 100 of them leased by a registered worker, the way
// it was before dropspec.go (path=walk: every unit removed in key order)
// and now (path=fast). ns/op is one DeleteWorkSpec call, all of it one
// hold of the namespace lock. Compare with
//
//	go test -run '^$' -bench DeleteSpec -count 6 ./memory/ | benchstat -col /path -
func BenchmarkDeleteSpec(b *testing.B) {
	for _, size := range listSizes(b) {
		for _, walk := range []bool{true, false} {
			path := map[bool]string{true: "walk", false: "fast"}[walk]
			b.Run(fmt.Sprintf("path=%s/units=%d", path, size), func(b *testing.B) {
				var longest time.Duration
				for range b.N {
					b.StopTimer()
					ns, ctx := benchNamespace(b)
					fill(b, ns, ctx, "q", size)
					w := coordinate.Name{Bytes: "w", Text: true}
					if err := ns.WorkerHeartbeat(ctx, coordinate.Heartbeat{Worker: w, Mode: coordinate.Null, Data: coordinate.EmptyMap, Expire: time.Hour}); err != nil {
						b.Fatal(err)
					}
					if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: w, LeaseTime: time.Minute, MaxJobs: 100}); err != nil {
						b.Fatal(err)
					}
					ns.st.walkSpecDeletes = walk
					b.StartTimer()
					t := time.Now()
					if err := ns.DeleteWorkSpec(ctx, "s"); err != nil {
						b.Fatal(err)
					}
					longest = max(longest, time.Since(t))
				}
				b.ReportMetric(float64(longest.Microseconds())/1000, "max-hold-ms")
			})
		}
	}
}
