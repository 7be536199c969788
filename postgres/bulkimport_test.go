package postgres

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"github.com/jackc/pgx/v5"

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
	}, false)
	if !errors.Is(err, coordinate.ErrWorkSpecExists) {
		t.Fatalf("import over an existing spec: %v, want ErrWorkSpecExists", err)
	}
	if _, err := ns.WorkSpec(ctx, "new"); !errors.Is(err, coordinate.ErrNoSuchWorkSpec) {
		t.Errorf("the failed import left spec \"new\" behind (%v)", err)
	}
	if err := bi.ImportWorkSpecs(ctx, []*coordinate.ImportedWorkSpec{
		{Definition: def("new"), Units: unit("n1")},
		{Definition: def("other"), Units: unit("x1")},
	}, false); err != nil {
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

// ImportWorkSpecs with replace deletes the specs of those names and
// imports the new ones in one transaction: when the import fails in the
// database after the deletion, the old spec, its units, their counts and
// the units waiting for them are as they were. When it succeeds, the
// replaced spec went as DeleteWorkSpec would take it: the units of other
// specs waiting for its units failed.
func TestImportWorkSpecsReplace(t *testing.T) {
	url := freshSchema(t)
	_, ns := openBackend(t, url, Options{})
	ctx := t.Context()
	def := func(name string) coordinate.Data {
		b, err := cbor.Marshal(map[string]any{"name": name})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, name := range []string{"old", "waiter"} {
		if _, err := ns.SetWorkSpec(ctx, def(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ns.AddWorkUnits(ctx, "old", []coordinate.WorkUnitInput{
		{Key: textName("o1"), Data: coordinate.Null}, {Key: textName("o2"), Data: coordinate.Null},
	}); err != nil {
		t.Fatal(err)
	}
	if err := ns.UpdateWorkUnit(ctx, "old", "o2", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		t.Fatal(err)
	}
	if err := ns.AddWorkUnits(ctx, "waiter", []coordinate.WorkUnitInput{
		{Key: textName("w1"), Data: coordinate.Null, DependsOn: []coordinate.UnitRef{{Spec: "old", Key: "o1"}}},
	}); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		var out []string
		for spec, keys := range map[string][]string{"old": {"o1", "o2", "n1"}, "waiter": {"w1"}} {
			c, err := ns.CountWorkUnits(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			us, err := ns.GetWorkUnits(ctx, spec, keys)
			if err != nil {
				t.Fatal(err)
			}
			line := fmt.Sprintf("%s %v:", spec, c)
			for _, u := range us {
				if u != nil { // nil: no such unit
					line += fmt.Sprintf(" %s=%v", u.Key.Bytes, u.Status)
				}
			}
			out = append(out, line)
		}
		sort.Strings(out)
		return strings.Join(out, "; ")
	}
	const want = "old map[available:1 finished:1]: o1=available o2=finished; waiter map[blocked:1]: w1=blocked"
	if got := state(); got != want {
		t.Fatalf("before the import: %s\nwant %s", got, want)
	}
	bi := ns.(coordinate.BulkImporter)
	replacement := []*coordinate.ImportedWorkSpec{{
		Definition: def("old"),
		Units:      []coordinate.ImportedWorkUnit{{Key: textName("n1"), Data: coordinate.Null, Status: coordinate.StatusAvailable}},
	}}

	// The database refuses every new unit, after the deletion.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE FUNCTION refuse_unit() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN RAISE EXCEPTION 'test refuses unit %', encode(NEW.key, 'escape'); END $$;
		CREATE TRIGGER refuse_unit BEFORE INSERT ON work_unit FOR EACH ROW EXECUTE FUNCTION refuse_unit()`); err != nil {
		t.Fatal(err)
	}
	err = bi.ImportWorkSpecs(ctx, replacement, true)
	if err == nil || !strings.Contains(err.Error(), "test refuses unit n1") {
		t.Fatalf("replace refused by the database: %v, want the trigger's error", err)
	}
	if got := state(); got != want {
		t.Errorf("after a failed replace: %s\nwant %s", got, want)
	}
	if _, err := conn.Exec(ctx, `DROP TRIGGER refuse_unit ON work_unit`); err != nil {
		t.Fatal(err)
	}

	// Without replace, the existing spec refuses the import.
	if err := bi.ImportWorkSpecs(ctx, replacement, false); !errors.Is(err, coordinate.ErrWorkSpecExists) {
		t.Errorf("import over an existing spec without replace: %v, want ErrWorkSpecExists", err)
	}
	if got := state(); got != want {
		t.Errorf("after a refused import: %s\nwant %s", got, want)
	}

	// With replace, and a spec of a new name beside it.
	replacement = append(replacement, &coordinate.ImportedWorkSpec{Definition: def("new")})
	if err := bi.ImportWorkSpecs(ctx, replacement, true); err != nil {
		t.Fatal(err)
	}
	const replaced = "old map[available:1]: n1=available; waiter map[failed:1]: w1=failed"
	if got := state(); got != replaced {
		t.Errorf("after the replace: %s\nwant %s", got, replaced)
	}
	if _, err := ns.WorkSpec(ctx, "new"); err != nil {
		t.Errorf("spec new after the replace: %v", err)
	}
}
