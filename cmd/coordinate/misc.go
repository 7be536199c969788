package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/pyvalue"
)

// rpc is `coordinate rpc METHOD PARAM...`: each PARAM is YAML, typed as
// Python 2's yaml.load typed it; prints repr(result) or repr(exception).
func (a *app) rpc(p *parsed) error {
	params := make([]any, 0, len(p.pos["param"]))
	for _, s := range p.pos["param"] {
		var v any
		if err := yaml.Unmarshal([]byte(s), &v); err != nil {
			return fmt.Errorf("parameter %q: %w", s, err)
		}
		pv, err := pyvalue.FromYAML(v)
		if err != nil {
			return fmt.Errorf("parameter %q: %w", s, err)
		}
		params = append(params, pv)
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	res, err := c.Call(a.ctx, p.pos["method"][0], params...)
	var se *client.ServerError
	switch {
	case errors.As(err, &se):
		a.printf("Exception(%s,)\n", pyvalue.ReprBytes(se.Message))
		return nil
	case err != nil:
		return err
	}
	a.printf("%s\n", pyvalue.WireRepr(res))
	return nil
}

func readLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

func lower(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }

// completion prints a bash or zsh completion script for the actions and
// their options.
func (a *app) completion(p *parsed) error {
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	var cases strings.Builder
	for _, n := range names {
		var flags []string
		for _, o := range cmds[n].opts {
			for _, f := range []string{o.short, o.long} {
				if f != "" {
					flags = append(flags, f)
				}
			}
		}
		fmt.Fprintf(&cases, "    %s) opts=%q ;;\n", n, strings.Join(append(flags, "-h", "--help"), " "))
	}
	switch shell := p.pos["shell"][0]; shell {
	case "bash":
		a.printf(`# bash completion for coordinate: source <(coordinate completion bash)
_coordinate() {
  local cur=${COMP_WORDS[COMP_CWORD]} action="" i opts
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      -c|--config|--debug) ((i++)) ;;
      -*) ;;
      *) action=${COMP_WORDS[i]}; break ;;
    esac
  done
  if [ -z "$action" ]; then
    COMPREPLY=($(compgen -W "%s -c --config -v -q -h" -- "$cur"))
    return
  fi
  case $action in
%s    *) opts="" ;;
  esac
  COMPREPLY=($(compgen -W "$opts" -f -- "$cur"))
}
complete -o default -F _coordinate coordinate
`, strings.Join(names, " "), cases.String())
	case "zsh":
		a.printf(`#compdef coordinate
# zsh completion for coordinate: source <(coordinate completion zsh)
autoload -U +X bashcompinit && bashcompinit
`)
		p.pos["shell"] = []string{"bash"}
		return a.completion(p)
	default:
		return usageError{"completion: want bash or zsh, got " + shell}
	}
	return nil
}
