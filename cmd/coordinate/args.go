package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The Python CLI parses each subcommand with argparse; this is the subset
// of argparse it relies on: short and long options (with "--opt=value",
// "-oVALUE", options after positionals, "--" to end them), choices,
// repeatable options, mutually exclusive required groups, and positionals
// with nargs 1, ?, * or +.

type opt struct {
	short, long string // "-w", "--work-spec"
	dest        string
	value       bool // takes a value
	repeat      bool
	choices     []string
	metavar     string
	help        string
	group       string // options of one group exclude each other
}

type pos struct {
	name  string
	nargs byte // '1', '?', '*', '+'
	help  string
}

type command struct {
	name     string
	help     string
	opts     []opt
	pos      []pos
	required []string // groups of which exactly one option is required
	run      func(a *app, p *parsed) error
}

type parsed struct {
	values map[string][]string
	pos    map[string][]string
}

func (p *parsed) str(dest string) string {
	if v := p.values[dest]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

func (p *parsed) has(dest string) bool { return len(p.values[dest]) > 0 }

func (p *parsed) list(dest string) []string { return p.values[dest] }

func (p *parsed) int(dest string) (int, bool, error) {
	s := p.str(dest)
	if s == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, false, usageError{fmt.Sprintf("argument %s: invalid int value: '%s'", dest, s)}
	}
	return n, true, nil
}

// usageError is a command-line mistake: exit status 2, as argparse.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func (c *command) find(arg string) *opt {
	for i := range c.opts {
		o := &c.opts[i]
		if (o.short != "" && arg == o.short) || (o.long != "" && arg == o.long) {
			return o
		}
	}
	return nil
}

func (c *command) parse(args []string) (*parsed, error) {
	p := &parsed{values: map[string][]string{}, pos: map[string][]string{}}
	var positionals []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			positionals = append(positionals, args[i+1:]...)
			break
		}
		if arg == "-h" || arg == "--help" {
			return nil, errHelp
		}
		if len(arg) < 2 || arg[0] != '-' || arg == "-" {
			positionals = append(positionals, arg)
			continue
		}
		name, value, hasValue := arg, "", false
		if strings.HasPrefix(arg, "--") {
			if k, v, ok := strings.Cut(arg, "="); ok {
				name, value, hasValue = k, v, true
			}
		} else if len(arg) > 2 {
			name, value, hasValue = arg[:2], arg[2:], true
		}
		o := c.find(name)
		if o == nil {
			return nil, usageError{"unrecognized arguments: " + arg}
		}
		if !o.value {
			if hasValue {
				return nil, usageError{fmt.Sprintf("argument %s: ignored explicit argument '%s'", optName(o), value)}
			}
			p.values[o.dest] = append(p.values[o.dest], "true")
			continue
		}
		if !hasValue {
			if i+1 >= len(args) || (len(args[i+1]) > 1 && args[i+1][0] == '-' && args[i+1] != "-" && !isNumber(args[i+1])) {
				return nil, usageError{fmt.Sprintf("argument %s: expected one argument", optName(o))}
			}
			i++
			value = args[i]
		}
		if len(o.choices) > 0 && !slices.Contains(o.choices, value) {
			quoted := make([]string, len(o.choices))
			for j, c := range o.choices {
				quoted[j] = "'" + c + "'"
			}
			return nil, usageError{fmt.Sprintf("argument %s: invalid choice: '%s' (choose from %s)", optName(o), value, strings.Join(quoted, ", "))}
		}
		p.values[o.dest] = append(p.values[o.dest], value)
	}
	for _, g := range c.required {
		var given []string
		for _, o := range c.opts {
			if o.group == g && p.has(o.dest) {
				given = append(given, optName(&o))
			}
		}
		switch {
		case len(given) == 0:
			var names []string
			for _, o := range c.opts {
				if o.group == g {
					names = append(names, optName(&o))
				}
			}
			return nil, usageError{"one of the arguments " + strings.Join(names, " ") + " is required"}
		case len(given) > 1:
			return nil, usageError{fmt.Sprintf("argument %s: not allowed with argument %s", given[1], given[0])}
		}
	}
	// Positionals: fixed ones first, the variable one takes the rest.
	rest := positionals
	for i, ps := range c.pos {
		after := 0
		for _, q := range c.pos[i+1:] {
			if q.nargs == '1' {
				after++
			}
		}
		switch ps.nargs {
		case '1':
			if len(rest) == 0 {
				return nil, usageError{"too few arguments"}
			}
			p.pos[ps.name], rest = rest[:1], rest[1:]
		case '?':
			if len(rest) > after {
				p.pos[ps.name], rest = rest[:1], rest[1:]
			}
		case '*', '+':
			n := max(len(rest)-after, 0)
			if ps.nargs == '+' && n == 0 {
				return nil, usageError{"too few arguments"}
			}
			p.pos[ps.name], rest = rest[:n], rest[n:]
		}
	}
	if len(rest) > 0 {
		return nil, usageError{"unrecognized arguments: " + strings.Join(rest, " ")}
	}
	return p, nil
}

func isNumber(s string) bool { _, err := strconv.ParseFloat(s, 64); return err == nil }

func optName(o *opt) string {
	if o.short != "" && o.long != "" {
		return o.short + "/" + o.long
	}
	if o.long != "" {
		return o.long
	}
	return o.short
}

var errHelp = errors.New("help requested")

// usage writes the command's usage and option help.
func (c *command) usage(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: coordinate %s [-h]", c.name)
	for _, o := range c.opts {
		n := o.short
		if n == "" {
			n = o.long
		}
		if o.value {
			n += " " + metavar(&o)
		}
		fmt.Fprintf(&b, " [%s]", n)
	}
	for _, p := range c.pos {
		switch p.nargs {
		case '1':
			fmt.Fprintf(&b, " %s", p.name)
		case '?':
			fmt.Fprintf(&b, " [%s]", p.name)
		case '*':
			fmt.Fprintf(&b, " [%s [%s ...]]", p.name, p.name)
		case '+':
			fmt.Fprintf(&b, " %s [%s ...]", p.name, p.name)
		}
	}
	fmt.Fprintln(w, b.String())
	fmt.Fprintf(w, "\n%s\n", c.help)
	if len(c.pos) > 0 {
		fmt.Fprintln(w, "\npositional arguments:")
		for _, p := range c.pos {
			fmt.Fprintf(w, "  %-24s %s\n", p.name, p.help)
		}
	}
	fmt.Fprintln(w, "\noptional arguments:")
	fmt.Fprintf(w, "  %-24s %s\n", "-h, --help", "show this help message and exit")
	for _, o := range c.opts {
		names := []string{}
		for _, n := range []string{o.short, o.long} {
			if n == "" {
				continue
			}
			if o.value {
				n += " " + metavar(&o)
			}
			names = append(names, n)
		}
		fmt.Fprintf(w, "  %-24s %s\n", strings.Join(names, ", "), o.help)
	}
}

func metavar(o *opt) string {
	switch {
	case o.metavar != "":
		return o.metavar
	case len(o.choices) > 0:
		return "{" + strings.Join(o.choices, ",") + "}"
	}
	return strings.ToUpper(o.dest)
}
