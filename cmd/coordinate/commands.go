package main

import (
	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/flow"
)

var statusChoices = []string{"available", "pending", "blocked", "finished", "failed"}

// specOpts is -w FILE | -W NAME, exactly one required (Python's
// _add_work_spec_name_args).
var specOpts = []opt{
	{short: "-w", long: "--work-spec", dest: "work_spec_path", value: true, metavar: "FILE", help: "path to a YAML or JSON file", group: "spec"},
	{short: "-W", long: "--work-spec-name", dest: "work_spec_name", value: true, metavar: "NAME", help: "name of a work spec for queries", group: "spec"},
}

var outputOpt = opt{short: "-o", long: "--output", dest: "output", value: true, choices: []string{"text", "json"}, help: "output format (json: machine-readable; not in the Python CLI)"}

func withSpec(opts ...opt) []opt { return append(append([]opt{}, specOpts...), opts...) }

// commands is every subcommand of the Python CLI plus the Go CLI's own.
func commands() map[string]*command {
	list := []*command{
		{name: "rpc", help: "Directly call a procedure on the server.",
			pos: []pos{{"method", '1', "RPC to call"}, {"param", '*', "YAML-syntax parameters"}}, run: (*app).rpc},
		{name: "flow", help: "Load a flow yaml describing a set of work specs",
			opts: []opt{{short: "-c", long: "--config", dest: "config", value: true, metavar: "FILE", help: "alternate configuration file"}},
			pos:  []pos{{"file", '1', "YAML file describing flow"}}, run: (*app).flow},
		{name: "load", help: "loads a work spec and some work_units into it\n\n--work-units file is JSON, one work unit per line, each line a JSON dict\nwith the one key being the work unit key and the value being a data dict\nfor the work unit.",
			opts: []opt{specOpts[0],
				{short: "-n", long: "--nice", dest: "nice", value: true, help: "specify a nice level for these jobs"},
				{short: "-u", long: "--work-units", dest: "work_units_path", value: true, metavar: "FILE", help: "path to file with one JSON record per line", group: "units"},
				{long: "--no-work", dest: "no_work", help: "set no work units, just the work spec", group: "units"},
				{long: "--keep-going", dest: "keep_going", help: "skip bad lines of the units file (reported on stderr) instead of sending nothing"},
				{long: "--batch", dest: "batch", value: true, metavar: "N", help: "work units per add_work_units request (default 10000)"}},
			required: []string{"units"}, run: (*app).load},
		{name: "addwork", help: "Add work units to a work spec's queue.\nInput file is JSON records one per line.\n{'work unit key':{any additional work unit data ...}}",
			opts: withSpec(
				opt{short: "-u", long: "--work-units", dest: "work_units_path", value: true, metavar: "FILE", help: "path to file with one JSON record per line"},
				opt{long: "--keep-going", dest: "keep_going", help: "skip bad lines of the units file (reported on stderr) instead of sending nothing"},
				opt{long: "--batch", dest: "batch", value: true, metavar: "N", help: "work units per add_work_units request (default 10000)"}),
			required: []string{"spec"}, run: (*app).addwork},
		{name: "pause", help: "Pause a work spec's queue.\nNo work units will be handed out to workers.",
			pos: []pos{{"spec", '1', "work spec to pause"}}, run: (*app).pause},
		{name: "resume", help: "Resume a paused work spec's queue.\nWork units from that work spec will again be handed out to workers.",
			pos: []pos{{"spec", '1', "work spec to unpause"}}, run: (*app).resume},
		{name: "prioritize", help: "Move work units to the front of a work spec queue.",
			pos: []pos{{"spec", '1', "work spec to modify"}, {"unit", '+', "work unit(s) to prioritize"}}, run: (*app).prioritize},
		{name: "config", help: "Retrieve the server's global configuration.",
			opts: []opt{{short: "-o", long: "--output", dest: "output", value: true, metavar: "FILE", help: "write config to FILE"}}, run: (*app).configCmd},
		{name: "worker_stats", help: "print the server's worker statistics", run: (*app).workerStats},
		{name: "delete", help: "delete the entire contents of the current coordinate environment",
			opts: []opt{{short: "-y", long: "--yes", dest: "assume_yes", help: `assume "yes" and require no input for confirmation questions.`}}, run: (*app).deleteAll},
		{name: "work_specs", help: "print the names of all of the work specs", opts: []opt{outputOpt}, run: (*app).workSpecs},
		{name: "work_spec", help: "dump the contents of an existing work spec",
			opts:     withSpec(opt{long: "--json", dest: "json", help: "write output in json"}, opt{long: "--yaml", dest: "yaml", help: "write output in yaml (default)"}),
			required: []string{"spec"}, run: (*app).workSpec},
		{name: "status", help: "print the number of work units in an existing work spec",
			opts: withSpec(), required: []string{"spec"}, run: (*app).status},
		{name: "summary", help: "print a summary of running work",
			opts: []opt{{long: "--json", dest: "json", help: "write output in json"}, {long: "--text", dest: "text", help: "write output in text"},
				{long: "--watch", short: "-watch", dest: "watch", help: "refresh the table in place until interrupted (not in the Python CLI)"},
				{long: "--interval", dest: "interval", value: true, metavar: "SECONDS", help: "refresh period of --watch (default 2)"},
				outputOpt}, run: (*app).summary},
		{name: "work_units", help: "list work units that have not yet completed",
			opts: withSpec(
				opt{short: "-n", long: "--limit", dest: "limit", value: true, metavar: "N", help: "only print N work units"},
				opt{short: "-s", long: "--status", dest: "status", value: true, choices: statusChoices, help: "print work units in STATUS"},
				opt{long: "--details", dest: "details", help: "also print the contents of the work units"},
				outputOpt),
			required: []string{"spec"}, run: (*app).workUnits},
		{name: "work_unit", help: "print basic details about work units",
			opts: withSpec(), required: []string{"spec"}, pos: []pos{{"unit", '*', "work unit name(s)"}}, run: (*app).workUnit},
		{name: "retry", help: "retry a specific failed job",
			opts:     withSpec(opt{short: "-a", long: "--all", dest: "all", help: "retry all failed jobs"}),
			required: []string{"spec"}, pos: []pos{{"unit", '*', "work unit name(s) to retry"}}, run: (*app).retry},
		{name: "clear", help: "remove work units from a work spec",
			opts:     withSpec(opt{short: "-s", long: "--status", dest: "status", value: true, choices: statusChoices, help: "print work units in STATUS"}),
			required: []string{"spec"}, pos: []pos{{"unit", '*', "work unit name(s) to remove"}}, run: (*app).clear},
		{name: "delete_work_units", help: "remove work units from a work spec (the RPC's name for clear)",
			opts:     withSpec(opt{short: "-s", long: "--status", dest: "status", value: true, choices: statusChoices, help: "only units in STATUS"}),
			required: []string{"spec"}, pos: []pos{{"unit", '*', "work unit name(s) to remove"}}, run: (*app).clear},
		{name: "workers", help: "list all known workers",
			opts: []opt{{long: "--all", dest: "all", help: "list all workers (even dead ones)"}, {long: "--details", dest: "details", help: "include more details if available"}, outputOpt},
			run:  (*app).workers},
		{name: "run_one", help: "run a single job (Go tasks only: this binary has no Python runtime; use coordinate_worker for Python tasks)",
			opts: []opt{{long: "--from-work-spec", dest: "from_work_spec", value: true, repeat: true, help: "workspec name to accept work from, may be repeated."},
				{long: "--limit-seconds", dest: "limit_seconds", value: true, metavar: "N", help: "stop after running for N seconds"},
				{long: "--limit-count", dest: "limit_count", value: true, metavar: "N", help: "stop after running for N work units"},
				{long: "--max-jobs", dest: "max_jobs", value: true, metavar: "N", help: "fetch up to N work units at once"}},
			run: (*app).runOne},
		{name: "archive", help: "apply the daemon's retention settings to finished and failed units (not in the Python CLI)",
			opts: []opt{{short: "-W", long: "--work-spec-name", dest: "work_spec_name", value: true, repeat: true, metavar: "NAME", help: "only this work spec (repeatable; default all)"}},
			run:  (*app).archive},
		{name: "completion", help: "print a shell completion script (not in the Python CLI)",
			pos: []pos{{"shell", '1', "bash or zsh"}}, run: (*app).completion},
		{name: "help", help: "list the actions, or describe one",
			pos: []pos{{"action", '?', "action to describe"}}, run: (*app).help},
	}
	m := make(map[string]*command, len(list))
	for _, c := range list {
		m[c.name] = c
	}
	return m
}

// specName is the work spec named by -W, or the `name` in the -w file.
func (a *app) specName(p *parsed) (string, error) {
	if n := p.str("work_spec_name"); n != "" {
		return n, nil
	}
	path := p.str("work_spec_path")
	def, err := flow.ReadSpecFile(path)
	if err != nil {
		return "", err
	}
	name, ok := flow.Name(def)
	if !ok {
		return "", &flow.Error{File: path, Field: "name", Msg: "missing"}
	}
	return name, nil
}

// specClient is specName and client together, for the commands that need
// both.
func (a *app) specClient(p *parsed) (string, *client.Client, error) {
	name, err := a.specName(p)
	if err != nil {
		return "", nil, err
	}
	c, err := a.client()
	return name, c, err
}
