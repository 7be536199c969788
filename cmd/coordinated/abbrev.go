package main

import (
	"flag"
	"fmt"
	"strings"
)

// expandAbbrev spells out abbreviated long options the way the Python
// daemon's argparse read them, so a unit file written for it starts ours:
// an argument "--PREFIX" or "--PREFIX=VALUE" that names no flag of fs is
// the one Python long option (pyLongOptions) starting with PREFIX
// (`--snap DIR` is --snapshot-dir, `--po=5932` --port).
//
// As in argparse, an exact name wins over a longer one it begins (--httpd
// is not ambiguous with -httpd-actions), nothing after "--" is touched,
// and a single dash abbreviates nothing (argparse read -snap as unknown).
// Our own flags are not abbreviated: several Python prefixes (--po,
// --snap, --ve) would otherwise become ambiguous with them
// (-postgres-timeout, -snapshot-bytes, -version). A prefix of several
// Python options, or of none that is a prefix of ours, is an error naming
// the candidates; other unknown names are left to the flag package, which
// reports them. Values of flags that take one are never rewritten.
func expandAbbrev(fs *flag.FlagSet, args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), nil
		}
		name, value, hasValue, ok := optionName(a)
		if !ok {
			out = append(out, a)
			continue
		}
		f := fs.Lookup(name)
		if f == nil && name != "h" && name != "help" && strings.HasPrefix(a, "--") {
			full, err := resolvePrefix(fs, name)
			if err != nil {
				return nil, err
			}
			a = "--" + full
			if hasValue {
				a += "=" + value
			}
			f = fs.Lookup(full)
		}
		out = append(out, a)
		if f != nil && !hasValue && !isBoolFlag(f) && i+1 < len(args) {
			i++
			out = append(out, args[i]) // its value, whatever it looks like
		}
	}
	return out, nil
}

// optionName splits "-name", "--name" and "--name=value" as the flag
// package reads them; ok is false for anything it does not read as a flag
// (a plain argument, "-", "---x", "-=x": the flag package reports those).
func optionName(a string) (name, value string, hasValue, ok bool) {
	if len(a) < 2 || a[0] != '-' {
		return "", "", false, false
	}
	name = strings.TrimPrefix(a[1:], "-")
	if name == "" || name[0] == '-' || name[0] == '=' {
		return "", "", false, false
	}
	name, value, hasValue = strings.Cut(name, "=")
	return name, value, hasValue, true
}

// resolvePrefix returns the Python long option prefix abbreviates, or an
// error naming the options it could be (argparse's "ambiguous option")
// or, when it abbreviates none of them, the flags of ours it begins.
func resolvePrefix(fs *flag.FlagSet, prefix string) (string, error) {
	var matches []string
	for _, n := range pyLongOptions {
		if strings.HasPrefix(n, prefix) {
			matches = append(matches, n)
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0], nil
	case len(matches) > 1:
		return "", fmt.Errorf("ambiguous option: --%s could match --%s", prefix, strings.Join(matches, ", --"))
	}
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, prefix) {
			matches = append(matches, f.Name)
		}
	})
	if len(matches) == 0 {
		return prefix, nil // unknown: the flag package says so
	}
	return "", fmt.Errorf("unknown option --%s: only the Python daemon's long options may be abbreviated; spell out -%s", prefix, strings.Join(matches, " or -"))
}

// isBoolFlag says whether f takes no separate value (the flag package's
// own test).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
