package coordinatetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/coordinated/coordinated/coordinate"
)

// Render is every spec of ns with its settings and counts and every unit
// (key, status, data, priority, worker), one line each, for a test to
// compare a namespace before and after something that must change
// nothing. It fails tb on error.
func Render(tb testing.TB, ns coordinate.Namespace) string {
	tb.Helper()
	ctx := context.Background()
	specs, _, err := ns.ListWorkSpecs(ctx, "", 0)
	if err != nil {
		tb.Fatal(err)
	}
	var out strings.Builder
	for _, sp := range specs {
		c, err := ns.CountWorkUnits(ctx, sp.Name.Bytes)
		if err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&out, "spec %q %v %+v\n", sp.Name.Bytes, c, sp.Meta)
		us, err := ns.ListWorkUnits(ctx, sp.Name.Bytes, coordinate.WorkUnitQuery{})
		if err != nil {
			tb.Fatal(err)
		}
		for _, u := range us {
			fmt.Fprintf(&out, "  %q %v %x %v %v\n", u.Key.Bytes, u.Status, []byte(u.Data), u.Priority, u.Worker)
		}
	}
	return out.String()
}
