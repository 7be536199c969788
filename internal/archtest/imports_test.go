package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/coordinated/coordinated"

// floors gives every package of the module its floor (docs/architecture.md).
// A package imports only packages on lower floors; its tests may also
// import packages on its own floor (a backend's tests use the conformance
// suite, jobserver's tests run against real backends). A package missing
// here fails the test: decide its floor when you add it.
var floors = map[string]int{
	// 0: leaves, importing nothing of ours.
	"internal/archtest":  0,
	"internal/cborx":     0,
	"pyvalue":            0,
	"internal/progress":  0,
	"internal/histo":     0,
	"internal/replyhold": 0,
	"internal/textcut":   0,
	// 1: the interface and its pure rules.
	"coordinate": 1,
	// 2: the conformance suite, and the mechanisms the backends and the
	// server are built from.
	"coordinate/coordinatetest": 2,
	"journal":                   2,
	"cborrpc":                   2,
	"internal/pgtest":           2,
	// The PostgreSQL backend's cache machinery, below the backend.
	"postgres/cachekeep": 2,
	// 3: the backends and the RPC adapter.
	"memory":    3,
	"postgres":  3,
	"jobserver": 3,
	"pyimport":  3, // the Python daemon's files into a Namespace; tests load into memory
	// 3 too: the client side of the wire, and the CLI's file formats.
	"client": 3,
	"flow":   3,
	// 4: the HTTP side (status page, metrics, dashboard) over the
	// backends; what is built on the client, and the helpers that start
	// daemons for the client side's tests.
	"web":                 4,
	"migrate":             4,
	"client/clienttest":   4,
	"internal/testdaemon": 4,
	// The Go worker library, over the interface and the client.
	"worker": 4,
	// 5: programs and end-to-end tests.
	"cmd/coordinated": 5,
	"examples/worker": 5,
	"cmd/coordbench":  5,
	"cmd/coordinate":  5,
	"crashtest":       5,
}

type listedPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < len(floors)/2 {
		t.Fatalf("go list found only %d packages; is the module path %s?", len(pkgs), module)
	}
	return pkgs
}

// local returns the module-relative path of an import, or "" when it is
// outside the module.
func local(path string) string {
	if path == module {
		return "."
	}
	if rest, ok := strings.CutPrefix(path, module+"/"); ok {
		return rest
	}
	return ""
}

func TestImportsRunDownTheFloors(t *testing.T) {
	var problems []string
	for _, p := range listPackages(t) {
		name := local(p.ImportPath)
		floor, known := floors[name]
		if !known {
			problems = append(problems, name+": no floor assigned in internal/archtest (see docs/architecture.md)")
			continue
		}
		check := func(imports []string, allowSame bool, kind string) {
			for _, imp := range imports {
				dep := local(imp)
				if dep == "" || dep == name {
					continue
				}
				depFloor, ok := floors[dep]
				switch {
				case !ok:
					problems = append(problems, name+" imports "+dep+", which has no floor")
				case depFloor > floor, depFloor == floor && !allowSame:
					problems = append(problems, name+" (floor "+itoa(floor)+") "+kind+" "+dep+" (floor "+itoa(depFloor)+")")
				}
			}
		}
		check(p.Imports, false, "imports")
		check(p.TestImports, true, "tests import")
		check(p.XTestImports, true, "tests import")
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestFloorTableHasNoStalePackages keeps the table honest: a package that
// was removed or renamed must leave it.
func TestFloorTableHasNoStalePackages(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range listPackages(t) {
		seen[local(p.ImportPath)] = true
	}
	for name := range floors {
		if !seen[name] {
			t.Errorf("internal/archtest lists %s, which go list does not find", name)
		}
	}
}

func itoa(n int) string { return string(rune('0' + n)) }
