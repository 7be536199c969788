//go:build linux

package journal

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkConcurrentODSyncWrites measures the disk under the journal's
// group writes, without the journal: W goroutines issue O_DSYNC writes of
// 600 bytes at consecutive offsets (sharing pages, as groups do) of a
// preallocated, fsynced file. "writes/s" against W=1 is what overlapping
// groups could gain at most, "µs/write" the latency each write pays for it
// (docs/persistence.md, "Group commit, sixth pass: overlapping syncs").
//
//	go test ./journal -run '^$' -bench ConcurrentODSyncWrites -benchtime 3s
func BenchmarkConcurrentODSyncWrites(b *testing.B) {
	const size, fileSize = 600, 64 << 20
	path := join(b.TempDir(), "dsync")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < fileSize; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros, off); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	d, err := openDataSync(path)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = 0x5a
	}
	for _, writers := range []int{1, 2, 3} {
		b.Run(fmt.Sprint(writers), func(b *testing.B) {
			var next, waited atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := range writers {
				n := b.N / writers
				if w < b.N%writers {
					n++
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range n {
						off := next.Add(size) % (fileSize - size)
						start := time.Now()
						if _, err := d.WriteAt(buf, off); err != nil {
							b.Error(err)
							return
						}
						waited.Add(int64(time.Since(start)))
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
			b.ReportMetric(float64(waited.Load())/1e3/float64(b.N), "µs/write")
		})
	}
}
