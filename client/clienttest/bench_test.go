package clienttest

import (
	"testing"

	"github.com/coordinated/coordinated/internal/testdaemon"
)

// BenchmarkCall is one call's round trip through the client to an
// in-process daemon (count_work_units on a spec of no units): the
// client's own cost per call beside the daemon's and the loopback's.
func BenchmarkCall(b *testing.B) {
	c := testdaemon.Dial(b, testdaemon.Ours(b, "memory"))
	ctx := b.Context()
	if err := c.SetWorkSpec(ctx, spec("s")); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := c.CountWorkUnits(ctx, "s"); err != nil {
			b.Fatal(err)
		}
	}
}
