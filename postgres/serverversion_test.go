package postgres

import (
	"strings"
	"testing"
)

func TestCheckServerVersion(t *testing.T) {
	for _, v := range []string{"13.0", "15.4 (Debian 15.4-1.pgdg120+1)", "17beta1", "16devel", "130"} {
		if err := checkServerVersion(v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"12.17", "9.6.24", "10beta3"} {
		err := checkServerVersion(v)
		if err == nil || !strings.Contains(err.Error(), "needs PostgreSQL 13 or later") || !strings.Contains(err.Error(), v) {
			t.Errorf("%q: got %v, want an error naming the version and the minimum", v, err)
		}
	}
	for _, v := range []string{"", "devel", "x13"} {
		if err := checkServerVersion(v); err == nil {
			t.Errorf("%q: accepted a version it cannot read", v)
		}
	}
}
