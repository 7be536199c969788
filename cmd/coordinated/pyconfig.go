package main

import (
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/coordinated/coordinated/pyvalue"
)

// pyConfig is the Python daemon's yakonfig YAML file. get_config serves
// it whole (jobserver.LoadYAMLConfig reads text); the daemon reads
// coordinate.server and coordinate.job_queue from it here.
type pyConfig struct {
	text []byte
	doc  map[string]any
}

func readPyConfig(path string) (*pyConfig, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	// As yakonfig read it: PyYAML, YAML 1.1 (`do_recover: no` is False).
	var node yaml.Node
	if err := yaml.Unmarshal(text, &node); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	pyvalue.ResolveYAML11(&node)
	var doc any
	if err := node.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := &pyConfig{text: text}
	switch d := doc.(type) {
	case nil:
		c.doc = map[string]any{}
	case map[string]any:
		c.doc = d
	default:
		return nil, fmt.Errorf("%s: the top level must be a mapping", path)
	}
	for _, sec := range []string{"server", "job_queue"} {
		if v, ok := lookup(c.doc, "coordinate", sec); ok && v != nil {
			if _, isMap := v.(map[string]any); !isMap {
				return nil, fmt.Errorf("%s: coordinate.%s must be a mapping", path, sec)
			}
		}
	}
	for _, k := range []string{"host", "httpd"} {
		if v, ok := lookup(c.doc, "coordinate", "server", k); ok && v != nil {
			if _, isStr := v.(string); !isStr {
				return nil, fmt.Errorf("%s: coordinate.server.%s must be a string, got %v", path, k, v)
			}
		}
	}
	if v, ok := lookup(c.doc, "coordinate", "server", "port"); ok && v != nil {
		if _, isInt := v.(int); !isInt {
			return nil, fmt.Errorf("%s: coordinate.server.port must be an integer, got %v", path, v)
		}
	}
	return c, nil
}

// lookup follows keys through nested mappings.
func lookup(v any, keys ...string) (any, bool) {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func (c *pyConfig) serverString(key string) (string, bool) {
	if c == nil {
		return "", false
	}
	v, _ := lookup(c.doc, "coordinate", "server", key)
	s, ok := v.(string)
	return s, ok
}

func (c *pyConfig) serverInt(key string) (int, bool) {
	if c == nil {
		return 0, false
	}
	v, _ := lookup(c.doc, "coordinate", "server", key)
	n, ok := v.(int)
	return n, ok
}

func (c *pyConfig) jobQueueString(key string) (string, bool) {
	if c == nil {
		return "", false
	}
	v, _ := lookup(c.doc, "coordinate", "job_queue", key)
	s, ok := v.(string)
	return s, ok
}

// jobQueueBool reads a job_queue flag with Python's truth value; set says
// it was given (and not null).
func (c *pyConfig) jobQueueBool(key string) (value, set bool) {
	if c == nil {
		return false, false
	}
	v, ok := lookup(c.doc, "coordinate", "job_queue", key)
	if !ok || v == nil {
		return false, false
	}
	switch x := v.(type) {
	case bool:
		return x, true
	case int:
		return x != 0, true
	case float64:
		return x != 0 && !math.IsNaN(x), true
	case string:
		return x != "", true
	}
	return true, true
}

// configNotes says, once at start, what the daemon does with each
// coordinate.server and coordinate.job_queue key of the file that it does
// not use as the Python daemon did (docs/compat.md has the full table).
var configNotes = map[string]map[string]string{
	"server": {
		"host":    "",
		"port":    "",
		"httpd":   "",
		"rpclog":  "no RPC log of its own: -log-level debug logs every failed request",
		"modules": "extra RPC modules cannot be loaded; only the job queue and lock services exist",
	},
	"job_queue": {
		"limit_completed_count":   "",
		"limit_completed_age":     "",
		"snapshot_path_format":    "",
		"log_path_format":         "",
		"do_recover":              "",
		"snapshot_period_seconds": "Python-format snapshots are never written; our own snapshots follow -snapshot-bytes",
		"delete_snapshots_beyond": "the Python daemon's files are never deleted; our own snapshots and journal segments are deleted once a newer snapshot supersedes them",
		"sqlite_path":             "units are stored by -backend (the memory journal in -data-dir, or PostgreSQL), not in SQLite",
		"postgres_connect":        "the Python daemon's PostgreSQL tables are not used: give -backend postgres://... for our own schema",
		"postgres_schema":         "the Python daemon's PostgreSQL tables are not used: give -backend postgres://... for our own schema",
		"joblog":                  "no per-unit job log: unit changes are in the journal, and -log-level debug logs failed requests",
	},
}

// notes lists, for the keys set in the file, those handled differently
// ("" reasons are honoured keys) and unknown ones, sorted.
func (c *pyConfig) notes() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, sec := range []string{"server", "job_queue"} {
		v, _ := lookup(c.doc, "coordinate", sec)
		m, _ := v.(map[string]any)
		for k, val := range m {
			reason, known := configNotes[sec][k]
			switch {
			case !known:
				out = append(out, fmt.Sprintf("coordinate.%s.%s is not a key the Python daemon knew; ignored", sec, k))
			case reason != "" && isSet(val):
				out = append(out, fmt.Sprintf("coordinate.%s.%s is not supported: %s", sec, k, reason))
			}
		}
	}
	sort.Strings(out)
	return out
}

// isSet reports whether a config value asks for something (not null,
// false, 0, "" or empty).
func isSet(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case int:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// pyDefaults is the Python daemon's default coordinate configuration
// (server.py's and job_server.py's default_config), as this daemon reads
// it: host 127.0.0.1 rather than localhost.
func pyDefaults() map[string]any {
	return map[string]any{"coordinate": map[string]any{
		"server": map[string]any{"host": "127.0.0.1", "port": 5932, "httpd": nil, "rpclog": false, "modules": []any{}},
		"job_queue": map[string]any{
			"snapshot_period_seconds": nil, "snapshot_path_format": nil, "log_path_format": nil,
			"do_recover": false, "delete_snapshots_beyond": nil, "limit_completed_count": nil,
			"limit_completed_age": nil, "joblog": false, "sqlite_path": nil, "postgres_connect": nil,
			"postgres_schema": "public",
		},
	}}
}

// dumpConfig prints the configuration as YAML for --dump-config: the
// file with the command line's settings applied (effective), that over
// the defaults (full), or the defaults alone (default).
func (o *options) dumpConfig(w io.Writer) error {
	var doc map[string]any
	switch o.py.dumpConfig {
	case "default":
		doc = pyDefaults()
	case "full":
		doc = pyDefaults()
		overlay(doc, o.effectiveConfig())
	default:
		doc = o.effectiveConfig()
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// effectiveConfig is the config file's tree with the command line's
// settings of coordinate.server and coordinate.job_queue applied.
func (o *options) effectiveConfig() map[string]any {
	doc := map[string]any{}
	if o.py.config != nil {
		overlay(doc, o.py.config.doc)
	}
	set := map[string]any{}
	if o.listenSet || o.py.host != "" || o.py.port != 0 {
		host, port, err := splitHostPort(o.listen)
		if err == nil {
			set["server"] = map[string]any{"host": host, "port": port}
		}
	}
	if o.py.httpdSet {
		srv, _ := set["server"].(map[string]any)
		if srv == nil {
			srv = map[string]any{}
			set["server"] = srv
		}
		srv["httpd"] = o.httpd
	}
	if o.py.snapshotDir != "" {
		set["job_queue"] = map[string]any{"snapshot_path_format": filepath.Join(o.py.snapshotDir, "snapshot_{timestamp}")}
	}
	if len(set) > 0 {
		overlay(doc, map[string]any{"coordinate": set})
	}
	return doc
}

// overlay merges src into dst, recursively for mappings.
func overlay(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			dm, ok := dst[k].(map[string]any)
			if !ok {
				dm = map[string]any{}
				dst[k] = dm
			}
			overlay(dm, sm)
			continue
		}
		dst[k] = v
	}
}

// splitHostPort splits a listen address into host and numeric port.
func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	return host, port, err
}
