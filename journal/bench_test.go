package journal

import (
	"context"
	"sync"
	"testing"
)

// BenchmarkAppendWait measures acknowledged appends per second from 8
// goroutines, each appending a 200-byte record and waiting for it, as RPC
// handlers would. "records/sync" is the average group size.
func BenchmarkAppendWait(b *testing.B) {
	for _, policy := range []SyncPolicy{SyncGroup, SyncNone} {
		b.Run(policy.String(), func(b *testing.B) {
			const goroutines = 8
			opts := testOptions(b.TempDir(), nil)
			opts.Sync = policy
			j, _ := mustOpen(b, opts)
			rec := make([]byte, 200)
			var stateMu sync.Mutex
			var wg sync.WaitGroup
			b.ResetTimer()
			for g := range goroutines {
				n := b.N / goroutines
				if g < b.N%goroutines {
					n++
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range n {
						stateMu.Lock()
						t := j.Append(rec)
						stateMu.Unlock()
						if err := j.Wait(context.Background(), t); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
			if s := j.Stats(); s.Flushes > 0 {
				b.ReportMetric(float64(s.Records)/float64(s.Flushes), "records/flush")
			}
			j.Close()
		})
	}
}
