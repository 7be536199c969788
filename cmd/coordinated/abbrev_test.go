package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestAbbreviatedOptions: a prefix of one Python long option is that
// option, as argparse read it; exact names, values, single-dash flags and
// everything after "--" are left alone.
func TestAbbreviatedOptions(t *testing.T) {
	fs := (&options{}).flagSet(io.Discard)
	for _, tc := range []struct{ args, want string }{
		{"--snap /x", "--snapshot-dir /x"},
		{"--snap=/x", "--snapshot-dir=/x"},
		{"--s /x", "--snapshot-dir /x"}, // not -stall-timeout, -sync, -snapshot-bytes
		{"--snapshot-dir=/x", "--snapshot-dir=/x"},
		{"--po 5932", "--port 5932"}, // not -postgres-timeout
		{"--por=5932", "--port=5932"},
		{"--ho a --ht :1 --pi f", "--host a --httpd :1 --pid f"},
		{"--co f --conf=f", "--config f --config=f"},
		{"--dum full --dump=default", "--dump-config full --dump-config=default"},
		{"--de x --deb=y", "--debug x --debug=y"},
		{"--ve --verb --qu", "--verbose --verbose --quiet"}, // not -version
		{"--he", "--help"},
		// Exact names win over the longer names they begin.
		{"--httpd :1 --httpd-token t", "--httpd :1 --httpd-token t"},
		{"--p 1 --v --q --c f", "--p 1 --v --q --c f"},
		{"--listen :1 --data-dir d --snapshot-bytes=9", "--listen :1 --data-dir d --snapshot-bytes=9"},
		{"--h", "--h"}, // the flag package's help, as -h
		// A value is never rewritten, whatever it looks like.
		{"--pid --snap --de --ho", "--pid --snap --debug --ho"},
		{"--verb --snap x", "--verbose --snapshot-dir x"},
		// After "--" nothing is an option; one dash abbreviates nothing.
		{"--po 1 -- --snap x", "--port 1 -- --snap x"},
		{"-snap x -po 1", "-snap x -po 1"},
		// Unknown and not a prefix of anything: left to the flag package.
		{"--zzz", "--zzz"},
	} {
		got, err := expandAbbrev(fs, strings.Fields(tc.args))
		if err != nil || !slices.Equal(got, strings.Fields(tc.want)) {
			t.Errorf("%s: %q, %v; want %s", tc.args, got, err, tc.want)
		}
	}
}

// TestAbbreviatedOptionErrors: an ambiguous prefix, or one of our own
// flags, is a usage error naming the candidates, and nothing is parsed.
func TestAbbreviatedOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--d", "x"}, "ambiguous option: --d could match --dump-config, --debug\n"},
		{[]string{"--port", "1", "--hel"}, ""}, // help, checked below
		{[]string{"--ht", ":1", "--d=x"}, "ambiguous option: --d could match --dump-config, --debug\n"},
		{[]string{"--pid", "f", "--p=1"}, ""}, // exact -p: fine
		{[]string{"--max", "5"}, "unknown option --max: only the Python daemon's long options may be abbreviated; spell out -max-connections or -max-lock-keys or"},
		{[]string{"--snapshot-b", "5"}, "spell out -snapshot-bytes\n"},
		{[]string{"--httpd-a"}, "spell out -httpd-actions\n"},
		{[]string{"--zzz"}, "flag provided but not defined: -zzz"},
		{[]string{"-snap", "/x"}, "flag provided but not defined: -snap"},
		{[]string{"--port", "1", "--", "--snap"}, `unexpected argument "--snap"`},
	} {
		var stderr bytes.Buffer
		o, err := parseOptions(tc.args, &stderr)
		switch {
		case tc.args[len(tc.args)-1] == "--hel":
			if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "-snapshot-dir") {
				t.Errorf("%q: %v, %q; want the usage", tc.args, err, stderr.String())
			}
		case tc.msg == "":
			if err != nil || o.listen != "127.0.0.1:1" {
				t.Errorf("%q: %v; want port 1\n%s", tc.args, err, stderr.String())
			}
		case err != errUsage || !strings.Contains(stderr.String(), tc.msg):
			t.Errorf("%q: %v, stderr %q; want a usage error with %q", tc.args, err, stderr.String(), tc.msg)
		}
	}
}

// TestPythonLongOptionsAreFlags: every option abbreviations resolve to is
// one the daemon has (help is the flag package's own).
func TestPythonLongOptionsAreFlags(t *testing.T) {
	fs := (&options{}).flagSet(io.Discard)
	for _, n := range pyLongOptions {
		if fs.Lookup(n) == nil && n != "help" {
			t.Errorf("--%s is not a flag", n)
		}
	}
}
