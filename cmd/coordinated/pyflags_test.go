package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "coordinate.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPythonCommandLine: the Python daemon's options, as a unit file gives
// them, resolve to our settings; flags win over the config file.
func TestPythonCommandLine(t *testing.T) {
	cfg := writeConfig(t, "coordinate:\n  server:\n    host: 10.1.2.3\n    port: 6000\n    httpd: ':7000'\n  job_queue:\n    log_path_format: /logs/log_{timestamp}\n")
	snap := t.TempDir()
	for _, tc := range []struct {
		args       []string
		listen     string
		httpd      string
		level      slog.Level
		dataDir    string
		snapFormat string
		logFormat  string
	}{
		{[]string{"-c", cfg}, "10.1.2.3:6000", ":7000", slog.LevelInfo, "/state/coordinated", "", ""},
		{[]string{"--config", cfg, "--host", "0.0.0.0", "-p", "5940", "--httpd", "127.0.0.1:5933"}, "0.0.0.0:5940", "127.0.0.1:5933", slog.LevelInfo, "/state/coordinated", "", ""},
		{[]string{"-c", cfg, "--port=5941", "-v"}, "10.1.2.3:5941", ":7000", slog.LevelDebug, "/state/coordinated", "", ""},
		{[]string{"-c", cfg, "-p5942", "-vv"}, "10.1.2.3:5942", ":7000", slog.LevelDebug - 4, "/state/coordinated", "", ""},
		{[]string{"--host", "0.0.0.0", "-qq"}, "0.0.0.0:5932", "", slog.LevelError, "/state/coordinated", "", ""},
		{[]string{"--quiet", "--debug", "coordinate.job_server"}, "127.0.0.1:5932", "", slog.LevelDebug, "/state/coordinated", "", ""},
		{[]string{"--snapshot-dir", snap, "-c", cfg}, "10.1.2.3:6000", ":7000", slog.LevelInfo,
			filepath.Join(snap, "coordinated"), filepath.Join(snap, "snapshot_{timestamp}"), "/logs/log_{timestamp}"},
		{[]string{"--snapshot-dir", snap, "-data-dir", "/mine"}, "127.0.0.1:5932", "", slog.LevelInfo, "/mine", filepath.Join(snap, "snapshot_{timestamp}"), ""},
		{[]string{"-listen", ":1234"}, ":1234", "", slog.LevelInfo, "/state/coordinated", "", ""},
		// Abbreviated as argparse allowed (abbrev.go).
		{[]string{"--snap", snap, "--po", "5943", "--ho=0.0.0.0", "--conf=" + cfg, "--ht", ":7001", "--verb"}, "0.0.0.0:5943", ":7001", slog.LevelDebug,
			filepath.Join(snap, "coordinated"), filepath.Join(snap, "snapshot_{timestamp}"), "/logs/log_{timestamp}"},
	} {
		t.Setenv("XDG_STATE_HOME", "/state")
		var stderr bytes.Buffer
		o, err := parseOptions(tc.args, &stderr)
		if err != nil {
			t.Fatalf("%q: %v\n%s", tc.args, err, stderr.String())
		}
		if o.listen != tc.listen || o.httpd != tc.httpd || o.logLevel != tc.level || o.dataDir != tc.dataDir ||
			o.py.snapshotFormat != tc.snapFormat || o.py.logFormat != tc.logFormat {
			t.Errorf("%q: listen %q httpd %q level %v data dir %q snapshots %q logs %q,\nwant %q %q %v %q %q %q", tc.args,
				o.listen, o.httpd, o.logLevel, o.dataDir, o.py.snapshotFormat, o.py.logFormat,
				tc.listen, tc.httpd, tc.level, tc.dataDir, tc.snapFormat, tc.logFormat)
		}
	}
}

func TestPythonConfigRecover(t *testing.T) {
	recoverCfg := writeConfig(t, "coordinate:\n  job_queue:\n    snapshot_path_format: /snaps/s_{timestamp}.gz\n    do_recover: true\n")
	o, err := parseOptions([]string{"-c", recoverCfg}, io.Discard)
	if err != nil || o.py.snapshotFormat != "/snaps/s_{timestamp}.gz" {
		t.Errorf("do_recover with snapshot_path_format: %q, %v", o.py.snapshotFormat, err)
	}
	noRecover := writeConfig(t, "coordinate:\n  job_queue:\n    snapshot_path_format: /snaps/s_{timestamp}\n    do_recover: false\n")
	if o, err := parseOptions([]string{"-c", noRecover}, io.Discard); err != nil || o.py.snapshotFormat != "" {
		t.Errorf("do_recover false: %q, %v", o.py.snapshotFormat, err)
	}
	if o, err := parseOptions([]string{"-c", noRecover, "--snapshot-dir", t.TempDir()}, io.Discard); err != nil || o.py.snapshotFormat != "" {
		t.Errorf("--snapshot-dir with do_recover false imports: %q, %v", o.py.snapshotFormat, err)
	}
}

func TestPythonBadCommandLines(t *testing.T) {
	badPort := writeConfig(t, "coordinate:\n  server:\n    port: fifty\n")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--no-such-option"}, "flag provided but not defined: -no-such-option"},
		{[]string{"-listen", ":1", "--port", "2"}, "not both"},
		{[]string{"--httpd", "5933"}, "ip:port or :port"},
		{[]string{"--port", "70000"}, "not a TCP port"},
		{[]string{"--dump-config=everything"}, "effective, full or default"},
		{[]string{"-c", "/no/such/file.yaml"}, "no such file"},
		{[]string{"-c", badPort}, "port must be an integer"},
		{[]string{"stray"}, `unexpected argument "stray"`},
	} {
		var stderr bytes.Buffer
		if _, err := parseOptions(tc.args, &stderr); err != errUsage {
			t.Errorf("%q: err %v, want a usage error", tc.args, err)
		}
		if !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%q: stderr %q lacks %q", tc.args, stderr.String(), tc.msg)
		}
	}
}

func TestDumpConfig(t *testing.T) {
	cfg := writeConfig(t, "coordinate:\n  server:\n    port: 6000\n  job_queue:\n    limit_completed_count: 10\nmine: {a: 1}\n")
	dump := func(args ...string) map[string]any {
		t.Helper()
		var stdout bytes.Buffer
		if err := run(context.Background(), args, &stdout, io.Discard, nil); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(stdout.Bytes(), &doc); err != nil {
			t.Fatalf("%q printed no YAML: %v\n%s", args, err, stdout.String())
		}
		return doc
	}
	get := func(doc map[string]any, keys ...string) any { v, _ := lookup(doc, keys...); return v }

	eff := dump("-c", cfg, "--host", "0.0.0.0", "--dump-config")
	if get(eff, "coordinate", "server", "host") != "0.0.0.0" || get(eff, "coordinate", "server", "port") != 6000 ||
		get(eff, "coordinate", "job_queue", "limit_completed_count") != 10 || get(eff, "mine", "a") != 1 {
		t.Errorf("effective config = %v", eff)
	}
	if get(eff, "coordinate", "job_queue", "sqlite_path") != nil {
		t.Error("effective config has defaults in it")
	}
	// argparse style: the value as the next argument, flags after it.
	full := dump("-c", cfg, "--dump-config", "full", "--snapshot-dir", "/snaps")
	if get(full, "coordinate", "job_queue", "postgres_schema") != "public" || get(full, "coordinate", "server", "port") != 6000 ||
		get(full, "coordinate", "job_queue", "snapshot_path_format") != "/snaps/snapshot_{timestamp}" {
		t.Errorf("full config = %v", full)
	}
	def := dump("-c", cfg, "--dump-config=default")
	if get(def, "coordinate", "server", "port") != 5932 || get(def, "mine") != nil {
		t.Errorf("default config = %v", def)
	}
}

// TestConfigNotes: keys we do not honour are logged once at start, with
// what we do instead.
func TestConfigNotes(t *testing.T) {
	cfg := writeConfig(t, "coordinate:\n  server:\n    rpclog: true\n  job_queue:\n    sqlite_path: /var/q.db\n    joblog: true\n    snapshot_period_seconds: 60\n    limit_completed_count: 5\n    bogus: 1\n")
	_, logs, stop := startDaemon(t, "-c", cfg)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"coordinate.job_queue.sqlite_path is not supported: units are stored by -backend",
		"coordinate.job_queue.joblog is not supported",
		"coordinate.job_queue.snapshot_period_seconds is not supported: Python-format snapshots are never written",
		"coordinate.server.rpclog is not supported",
		"coordinate.job_queue.bogus is not a key the Python daemon knew",
	} {
		if n := strings.Count(logs.String(), want); n != 1 {
			t.Errorf("log has %q %d times, want once:\n%s", want, n, logs)
		}
	}
	if strings.Contains(logs.String(), "limit_completed_count is not") {
		t.Error("an honoured key was reported as unsupported")
	}
}

// TestPIDFile: --pid writes the process id and a clean exit removes it.
func TestPIDFile(t *testing.T) {
	pid := filepath.Join(t.TempDir(), "coordinated.pid")
	_, _, stop := startDaemon(t, "--pid", pid)
	got, err := os.ReadFile(pid)
	if err != nil || string(got) != itoa(os.Getpid()) {
		t.Errorf("pid file holds %q (%v), want %d", got, err, os.Getpid())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pid); !os.IsNotExist(err) {
		t.Errorf("pid file left after a clean exit: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestPythonConfigYAML11: yakonfig read the config file with PyYAML
// (YAML 1.1), where `do_recover: no` or `off` is False: the take-over
// stays off, as it would for `false`, not on for a non-empty string. And
// `port: 0x172c` is 5932 there.
func TestPythonConfigYAML11(t *testing.T) {
	for _, v := range []string{"no", "off", "No", "OFF"} {
		cfg := writeConfig(t, "coordinate:\n  job_queue:\n    do_recover: "+v+"\n")
		o, err := parseOptions([]string{"-c", cfg, "--snapshot-dir", t.TempDir()}, io.Discard)
		if err != nil || o.py.snapshotFormat != "" {
			t.Errorf("do_recover: %s with --snapshot-dir: snapshots %q, %v; want no take-over", v, o.py.snapshotFormat, err)
		}
	}
	cfg := writeConfig(t, "coordinate:\n  server:\n    port: 0x172c\n  job_queue:\n    snapshot_path_format: /s/s_{timestamp}\n    do_recover: yes\n")
	o, err := parseOptions([]string{"-c", cfg}, io.Discard)
	if err != nil || o.py.snapshotFormat != "/s/s_{timestamp}" || o.listen != "127.0.0.1:5932" {
		t.Errorf("do_recover: yes, port 0x172c: snapshots %q, listen %q, %v", o.py.snapshotFormat, o.listen, err)
	}
}
