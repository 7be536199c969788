package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// BenchmarkWorkerHeartbeat: many live workers, each op one heartbeat of
// the next, which moves it from the top of the expiry heap to the bottom.
// ns/op is one WorkerHeartbeat with its expiry check.
//
//	go test -run '^$' -bench WorkerHeartbeat -count 6 ./memory/
func BenchmarkWorkerHeartbeat(b *testing.B) {
	for _, workers := range []int{100, 100_000} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			ns := newNamespace("", Options{Clock: clock, StallTimeout: coordinate.DefaultStallTimeout})
			ctx := context.Background()
			hbs := make([]coordinate.Heartbeat, workers)
			for i := range hbs {
				hbs[i] = coordinate.Heartbeat{Worker: coordinate.Name{Bytes: fmt.Sprintf("w%06d", i), Text: true}, Expire: time.Hour}
				if err := ns.WorkerHeartbeat(ctx, hbs[i]); err != nil {
					b.Fatal(err)
				}
				clock.Add(time.Microsecond)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := ns.WorkerHeartbeat(ctx, hbs[i%workers]); err != nil {
					b.Fatal(err)
				}
				clock.Add(time.Microsecond)
			}
			b.StopTimer()
			if n := len(ns.st.workers.byExpiry); n != workers {
				b.Fatalf("%d workers live, want %d", n, workers)
			}
		})
	}
}
