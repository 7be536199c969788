package main

import (
	_ "embed"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/flow"
	"github.com/coordinated/coordinated/pyvalue"
)

// The Python CLI's global configuration is yakonfig's: the defaults of
// the yakonfig, dblogger and coordinate modules, overlaid with the -c
// file, plus yakonfig.config naming that file. `flow` sends it as every
// spec's `config`, so `work_spec` shows it; these are those defaults, as
// coordinate 0.1.5 and dblogger produce them.

//go:embed pydefaults.yaml
var pyDefaultsYAML []byte

func pyDefaults(withLogging bool) (map[any]any, error) {
	var doc any
	if err := yaml.Unmarshal(pyDefaultsYAML, &doc); err != nil {
		return nil, err
	}
	v, err := pyvalue.FromYAML(doc)
	if err != nil {
		return nil, err
	}
	m := v.(map[any]any)
	if !withLogging {
		delete(m, pyvalue.StringKey("logging"))
	}
	return m, nil
}

// flowBaseConfig is the configuration flow gives every spec: the CLI's
// global configuration, or with `flow -c ALT` the coordinate defaults
// overlaid with ALT.
func (a *app) flowBaseConfig(alt string) (map[any]any, error) {
	path := a.configPath
	withLogging := true
	var tree map[string]any
	if alt != "" {
		cfg, err := client.LoadConfig(alt)
		if err != nil {
			return nil, err
		}
		path, tree, withLogging = alt, cfg.Tree, false
	} else {
		cfg, err := a.config()
		if err != nil {
			return nil, err
		}
		tree = cfg.Tree
	}
	base, err := pyDefaults(withLogging)
	if err != nil {
		return nil, fmt.Errorf("built-in defaults: %w", err)
	}
	if tree != nil {
		v, err := pyvalue.FromYAML(tree)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		base = flow.Overlay(base, v.(map[any]any))
	}
	return flow.Overlay(base, map[any]any{pyvalue.StringKey("yakonfig"): map[any]any{pyvalue.StringKey("config"): pyvalue.String(path)}}), nil
}
