package main

import "testing"

func TestHTTPDAddr(t *testing.T) {
	for in, want := range map[string]string{
		":5933":         "127.0.0.1:5933",
		"5933":          "127.0.0.1:5933",
		"0.0.0.0:5933":  "0.0.0.0:5933",
		"[::1]:5933":    "[::1]:5933",
		"10.1.2.3:8080": "10.1.2.3:8080",
	} {
		if got, err := httpdAddr(in); err != nil || got != want {
			t.Errorf("httpdAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := httpdAddr("nonsense"); err == nil {
		t.Errorf("httpdAddr(nonsense) accepted")
	}
}
