package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestBar(t *testing.T) {
	var out bytes.Buffer
	b := New(&out, "units", true)
	clock := b.start
	b.now = func() time.Time { return clock }
	clock = clock.Add(2 * time.Second)
	b.Update("load", 500, 1000)
	b.Update("load", 600, 1000) // within 100 ms: not drawn
	clock = clock.Add(time.Second)
	b.Finish("load", 1000, 1000)
	got := out.String()
	want := "\rload [============            ]  50% 500/1000 units 250/s ETA 2s" +
		"\rload [========================] 100% 1000/1000 units 333/s ETA 0s\n"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if New(&out, "units", false) != nil {
		t.Error("a disabled bar is not nil")
	}
	var nilBar *Bar
	nilBar.Update("x", 1, 2) // must not panic
	if strings.Count(got, "\n") != 1 {
		t.Errorf("%q", got)
	}
}
