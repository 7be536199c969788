package memory

import (
	"context"
	"testing"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/cborx"
)

// defineSpec sets the work spec {"name": name} in ns, failing tb if it
// cannot.
func defineSpec(tb testing.TB, ctx context.Context, ns coordinate.Namespace, name string) {
	tb.Helper()
	def := cborx.AppendText(coordinate.Data{0xa1, 0x64, 'n', 'a', 'm', 'e'}, name)
	if _, err := ns.SetWorkSpec(ctx, def); err != nil {
		tb.Fatal(err)
	}
}
