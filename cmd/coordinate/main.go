// Command coordinate is the Go replacement of the Python `coordinate` CLI
// (coordinate==0.1.5, coordinatec.py): the same subcommands, flags, YAML
// client config, flow, spec and units files, and the same printed output,
// against any daemon that speaks the legacy protocol.
//
// Usage:
//
//	coordinate [-c CONFIG] [-v] [-q] ACTION [ACTION-ARGS...]
//	coordinate help [ACTION]
//
// With no ACTION it reads actions from stdin at a "coordinatec> " prompt,
// as the Python CLI's shell does.
//
// Where the Python CLI printed a traceback, this one prints one line on
// stderr and exits 1; a command-line mistake exits 2. Beyond Python:
// `-o json` on the listing commands, batched sends with a progress bar for
// large units files (load, addwork), `summary -watch`, `completion
// bash|zsh`, `archive`. run_one runs Go tasks only (none are built in).
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/coordinated/coordinated/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// app is one invocation: its streams, configuration and (lazy) client.
type app struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	configPath     string
	verbose, quiet int
	cfg            *client.Config
	cl             *client.Client
}

// run is the whole command; it returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	i := 0
	for ; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "-c" || arg == "--config":
			if i+1 >= len(args) {
				return a.usageFail("argument -c/--config: expected one argument")
			}
			i++
			a.configPath = args[i]
		case strings.HasPrefix(arg, "--config="):
			a.configPath = strings.TrimPrefix(arg, "--config=")
		case strings.HasPrefix(arg, "-c") && len(arg) > 2 && !strings.HasPrefix(arg, "--"):
			a.configPath = arg[2:]
		case arg == "-v" || arg == "--verbose":
			a.verbose++
		case arg == "-q" || arg == "--quiet":
			a.quiet++
		case arg == "--debug":
			i++ // takes a logger name; logging is not configurable here
		case arg == "-h" || arg == "--help":
			a.help(nil)
			return 0
		case strings.HasPrefix(arg, "-") && arg != "-":
			return a.usageFail("unrecognized arguments: " + arg)
		default:
			goto action
		}
	}
action:
	if i >= len(args) {
		return a.shell()
	}
	defer func() {
		if a.cl != nil {
			a.cl.Close()
		}
	}()
	return a.dispatch(args[i], args[i+1:])
}

// dispatch runs one action with its arguments and returns the exit status.
func (a *app) dispatch(name string, rest []string) int {
	cmd := commands()[name]
	if cmd == nil {
		return a.usageFail(fmt.Sprintf("unknown action %q (see `coordinate help`)", name))
	}
	p, err := cmd.parse(rest)
	if errors.Is(err, errHelp) {
		cmd.usage(a.stdout)
		return 0
	}
	if err != nil {
		cmd.usage(a.stderr)
		fmt.Fprintf(a.stderr, "coordinate %s: error: %v\n", name, err)
		return 2
	}
	err = cmd.run(a, p)
	var ue usageError
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return int(ee)
	case errors.As(err, &ue):
		cmd.usage(a.stderr)
		fmt.Fprintf(a.stderr, "coordinate %s: error: %v\n", name, err)
		return 2
	}
	fmt.Fprintf(a.stderr, "coordinate %s: %v\n", name, err)
	return 1
}

// shell is the Python CLI's interactive mode (no ACTION): a
// "coordinatec> " prompt reading one action per line (split like a shell
// line), until `quit` or end of input. The exit status is 0.
func (a *app) shell() int {
	defer func() {
		if a.cl != nil {
			a.cl.Close()
		}
	}()
	in := bufio.NewReader(a.stdin)
	for {
		a.printf("coordinatec> ")
		line, err := in.ReadString('\n')
		words, serr := shellSplit(line)
		switch {
		case serr != nil:
			fmt.Fprintf(a.stderr, "coordinate: %v\n", serr)
		case len(words) == 0:
		case words[0] == "quit" || words[0] == "EOF":
			return 0
		default:
			a.dispatch(words[0], words[1:])
		}
		if err != nil {
			return 0 // end of input, like quit
		}
	}
}

// shellSplit splits a line into words as Python's shlex.split does for
// the usual cases: blanks separate words, quotes group, backslash escapes
// outside single quotes.
func shellSplit(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range line {
		switch {
		case escaped:
			w.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, errors.New("no closing quotation")
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// exitError ends a command with a status and no message.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func (a *app) usageFail(msg string) int {
	fmt.Fprintln(a.stderr, "usage: coordinate [-h] [-c FILE] [-v] [-q] ACTION [ARGS...]")
	fmt.Fprintln(a.stderr, "coordinate: error: "+msg)
	return 2
}

// config loads the client configuration from -c.
func (a *app) config() (*client.Config, error) {
	if a.cfg != nil {
		return a.cfg, nil
	}
	if a.configPath == "" {
		return nil, errors.New("no configuration: give -c FILE, a YAML file with coordinate.address (\"host:port\")")
	}
	cfg, err := client.LoadConfig(a.configPath)
	if err != nil {
		return nil, err
	}
	a.cfg = &cfg
	return a.cfg, nil
}

// client returns the connection to the daemon (opened on first use).
func (a *app) client() (*client.Client, error) {
	if a.cl != nil {
		return a.cl, nil
	}
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	cl, err := client.New(*cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.configPath, err)
	}
	a.cl = cl
	return cl, nil
}

func (a *app) printf(format string, args ...any) { fmt.Fprintf(a.stdout, format, args...) }

// help is `coordinate help [ACTION]`.
func (a *app) help(p *parsed) error {
	if p != nil {
		if topic := p.pos["action"]; len(topic) == 1 {
			cmd := commands()[topic[0]]
			if cmd == nil {
				return usageError{fmt.Sprintf("unknown action %q", topic[0])}
			}
			cmd.usage(a.stdout)
			return nil
		}
	}
	a.printf("usage: coordinate [-h] [-c FILE] [-v] [-q] ACTION [ARGS...]\n\nactions:\n")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a.printf("  %-18s %s\n", n, firstLine(cmds[n].help))
	}
	a.printf("\n`coordinate help ACTION` or `coordinate ACTION -h` describes one action.\n")
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
