package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// BenchmarkExpiryPass: many specs, each with a unit delayed an hour, and
// one spec whose unit comes due before every operation, so each op runs
// the expiry check and pass with one spec of thousands due. ns/op is one
// AddWorkUnits with its expiry pass.
//
//	go test -run '^$' -bench ExpiryPass -count 6 ./memory/
func BenchmarkExpiryPass(b *testing.B) {
	for _, specs := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("specs=%d", specs), func(b *testing.B) {
			clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			ns := newNamespace("", Options{Clock: clock, StallTimeout: coordinate.DefaultStallTimeout})
			ctx := context.Background()
			later := []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "later"}, Data: smallData, Delay: time.Hour}}
			for i := range specs {
				name := fmt.Sprintf("s%05d", i)
				defineSpec(b, ctx, ns, name)
				if err := ns.AddWorkUnits(ctx, name, later); err != nil {
					b.Fatal(err)
				}
			}
			soon := []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "soon"}, Data: smallData, Delay: time.Nanosecond}}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := ns.AddWorkUnits(ctx, "s00000", soon); err != nil {
					b.Fatal(err)
				}
				clock.Add(time.Microsecond)
			}
			b.StopTimer()
			if _, err := ns.Workers(ctx); err != nil { // runs the expiry pass
				b.Fatal(err)
			}
			if ns.st.specs["s00000"].available.Len() != 1 {
				b.Fatal("the delayed unit never became available: no expiry pass ran")
			}
		})
	}
}
