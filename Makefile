# The two commands of the README: `make run` and `make test`.
.PHONY: run test test-go build bench bench-load fuzz soak perf-table perf-scale perf-python probes

build:
	go build -o bin/coordinated ./cmd/coordinated

run: build
	./bin/coordinated

test:
	scripts/test.sh

# The Go half of `make test` (with its throwaway PostgreSQL): a quick green loop.
test-go:
	scripts/test.sh go

bench:
	go test -run '^$$' -bench . -benchmem ./...

# The randomized tests, longer than the test command runs them: the
# PostgreSQL backend's differential test against the memory backend over
# SOAK_SEEDS seeds (200, about 5 minutes), the three-daemon stress test
# for SOAK_SECONDS (120), and the random calls compared with the real
# Python daemon over SOAK_COMPARE_SEEDS seeds (100) of SOAK_COMPARE_OPS
# calls (400) on the memory and PostgreSQL backends (about 6 and 9
# minutes); a throwaway PostgreSQL unless COORDINATE_TEST_POSTGRES names one.
# A failure prints the seed to replay.
soak:
	scripts/test.sh soak

# Longer fuzzing than the test command's few seconds: FUZZTIME per target.
# Minimising a new input is capped so that it cannot stall a run. A failure
# leaves its input under the package's testdata/fuzz/ (commit it as a
# regression). FuzzReplay writes files: one worker.
FUZZTIME ?= 2m
FUZZ = go test -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -fuzz
fuzz:
	$(FUZZ) '^FuzzValidate$$' ./internal/cborx
	$(FUZZ) '^FuzzAppendHead$$' ./internal/cborx
	$(FUZZ) '^FuzzReadRequest$$' ./cborrpc
	$(FUZZ) '^FuzzReplay$$' -parallel 1 ./journal
	$(FUZZ) '^FuzzSnapshotLoad$$' ./memory
	$(FUZZ) '^FuzzDeltaLoad$$' ./memory
	$(FUZZ) '^FuzzRecordApply$$' ./memory

# Load a 1,000,000-line units file with the Go coordinate CLI: units/s and
# the CLI's peak RSS, against an in-process memory daemon.
bench-load:
	go test -run '^$$' -bench LoadMillion -benchtime 1x ./cmd/coordinate

# The figures of docs/limits.md ("Measured"): a real daemon process's RSS
# under 2,000 connections sending large request heads, and the drain rate
# of 8 workers with and without 5,000 idle connections. PROBECOUNT runs.
PROBECOUNT ?= 5
probes:
	go test -run '^$$' -bench '^BenchmarkProbe' -benchtime 1x -count $(PROBECOUNT) -timeout 30m ./cmd/coordinated

# The README's performance table (units/s for every storage choice at 8
# and 64 connections; RUNS rounds, median and range): about ten minutes.
perf-table:
	scripts/perftable.sh

# Real Python workers (coordinate 0.1.5's TaskMaster in 1 and in 8
# processes) draining one spec on the Python daemon and on ours (volatile,
# durable, and PostgreSQL when COORDINATE_TEST_POSTGRES is set): units/s
# and the finish latency the client sees; a few minutes.
perf-python: build
	scripts/pythontest.sh --setup-only
	COORDINATED_BIN=$(CURDIR)/bin/coordinated .venv-py27/bin/python scripts/pyclient_bench.py -clients 1 -units 5000
	COORDINATED_BIN=$(CURDIR)/bin/coordinated .venv-py27/bin/python scripts/pyclient_bench.py -clients 8 -units 20000 -runs 3

# Flat to ten million: preload rate, drain rate at 10,000 and at
# 10,000,000 queued units, their ratio and the daemon's peak RSS, for the
# volatile, durable default and PostgreSQL backends (QUEUED, SAMPLE,
# PER_CALL, CONFIGS; scripts/perfscale.sh). Needs ~9 GB free and about
# half an hour.
perf-scale:
	scripts/perfscale.sh
