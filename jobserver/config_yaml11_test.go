package jobserver

import (
	"testing"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/pyvalue"
)

// TestLoadYAMLConfigAsPyYAML: get_config serves the config file as
// yakonfig read it with PyYAML (YAML 1.1), as the Python daemon served it:
// `off` is False (not the string "off", which a worker reading its
// settings from the daemon takes as true), `1e3` a string, `1:30` 90.
func TestLoadYAMLConfigAsPyYAML(t *testing.T) {
	data, _, err := LoadYAMLConfig([]byte("app:\n  on_flag: yes\n  off_flag: off\n  e: 1e3\n  t: 1:30\n  o: 0755\n  q: 'no'\n"))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := cborrpc.DecMode().Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	app := v.(map[any]any)
	for _, val := range app {
		app = val.(map[any]any)
	}
	got := map[string]string{}
	for k, val := range app {
		ks, _ := pyvalue.Text(k)
		got[ks] = pyvalue.Repr(val)
	}
	want := map[string]string{"on_flag": "True", "off_flag": "False", "e": "'1e3'", "t": "90", "o": "493", "q": "'no'"}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %s, want %s", k, got[k], w)
		}
	}
}
