package postgres

import (
	"errors"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// ImportWorkSpecs stores every spec or none: the second spec of the
// import exists already, so the first, written before it in the same
// transaction, is not stored either. (Imported spec by spec, a daemon
// killed part way left some specs, and its next start saw a non-empty
// backend and never imported the rest.)
func TestImportWorkSpecsAllOrNothing(t *testing.T) {
	_, ns := openBackend(t, freshSchema(t), Options{})
	ctx := t.Context()
	def := func(name string) coordinate.Data {
		b, err := cbor.Marshal(map[string]any{"name": name})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := ns.SetWorkSpec(ctx, def("old")); err != nil {
		t.Fatal(err)
	}
	unit := func(key string) []coordinate.ImportedWorkUnit {
		return []coordinate.ImportedWorkUnit{{Key: coordinate.Name{Bytes: key, Text: true}, Data: coordinate.Null, Status: coordinate.StatusAvailable}}
	}
	bi, ok := ns.(coordinate.BulkImporter)
	if !ok {
		t.Fatalf("%T does not import in bulk", ns)
	}
	err := bi.ImportWorkSpecs(ctx, []*coordinate.ImportedWorkSpec{
		{Definition: def("new"), Units: unit("n1")},
		{Definition: def("old"), Units: unit("o1")},
	})
	if !errors.Is(err, coordinate.ErrWorkSpecExists) {
		t.Fatalf("import over an existing spec: %v, want ErrWorkSpecExists", err)
	}
	if _, err := ns.WorkSpec(ctx, "new"); !errors.Is(err, coordinate.ErrNoSuchWorkSpec) {
		t.Errorf("the failed import left spec \"new\" behind (%v)", err)
	}
	if err := bi.ImportWorkSpecs(ctx, []*coordinate.ImportedWorkSpec{
		{Definition: def("new"), Units: unit("n1")},
		{Definition: def("other"), Units: unit("x1")},
	}); err != nil {
		t.Fatal(err)
	}
	for spec, key := range map[string]string{"new": "n1", "other": "x1"} {
		us, err := ns.GetWorkUnits(ctx, spec, []string{key})
		if err != nil || len(us) != 1 || us[0].Status != coordinate.StatusAvailable {
			t.Errorf("%s/%s after the import: %+v %v", spec, key, us, err)
		}
		if c, err := ns.CountWorkUnits(ctx, spec); err != nil || c[coordinate.StatusAvailable] != 1 {
			t.Errorf("%s counts %v %v", spec, c, err)
		}
	}
}
