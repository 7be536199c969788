package postgres

import (
	"reflect"
	"testing"

	"github.com/coordinated/coordinated/coordinate"
)

// TestWatchedForwardsEverything: the namespace the Backend hands out
// (watchedNamespace) has every exported method of the raw namespace with
// the same signature, so each optional interface the namespace implements
// (coordinate.StatsReader, GroupLister, WorkerUnitLister, the importer,
// and any added later) is found by a type assertion on what callers get.
func TestWatchedForwardsEverything(t *testing.T) {
	raw, wrapped := reflect.TypeOf((*namespace)(nil)), reflect.TypeOf((*watchedNamespace)(nil))
	if raw.NumMethod() == 0 {
		t.Fatal("the namespace has no exported methods")
	}
	for i := range raw.NumMethod() {
		m := raw.Method(i)
		w, ok := wrapped.MethodByName(m.Name)
		if !ok {
			t.Errorf("watchedNamespace lacks %s: type assertions for the interface it belongs to fail", m.Name)
			continue
		}
		// Compare without the receiver.
		if sig(m.Type) != sig(w.Type) {
			t.Errorf("watchedNamespace.%s is %s, the namespace's is %s", m.Name, sig(w.Type), sig(m.Type))
		}
	}
	for _, iface := range []reflect.Type{
		reflect.TypeFor[coordinate.StatsReader](), reflect.TypeFor[coordinate.GroupLister](),
		reflect.TypeFor[coordinate.WorkerUnitLister](),
	} {
		if !wrapped.Implements(iface) {
			t.Errorf("watchedNamespace does not implement %v", iface)
		}
	}
}

// sig is a method's signature without its receiver.
func sig(f reflect.Type) string {
	s := "("
	for i := 1; i < f.NumIn(); i++ {
		s += f.In(i).String() + ","
	}
	s += ")("
	for i := range f.NumOut() {
		s += f.Out(i).String() + ","
	}
	return s + ")"
}
