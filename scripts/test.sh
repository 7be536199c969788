#!/usr/bin/env bash
# Runs every test of the project on a fresh machine: gofmt, go vet,
# staticcheck, `go mod tidy -diff`, the Go tests (with the race detector)
# including the conformance suite against every backend and the Go client,
# CLI and migrate against the real Python daemon and CLI, and the Python
# suites against a running daemon. It starts a throwaway PostgreSQL itself
# unless COORDINATE_TEST_POSTGRES names one.
#
#   scripts/test.sh        everything (the README's `make test`, and CI)
#   scripts/test.sh go     the Go checks and tests only (`make test-go`)
#   scripts/test.sh soak   the randomized tests, long (`make soak`): the
#                          PostgreSQL backend's differential test against
#                          the memory backend over SOAK_SEEDS seeds (default
#                          200), the three-daemon stress test for
#                          SOAK_SECONDS (default 120), and the random calls
#                          compared with the real Python daemon
#                          (pythontest/compare/test_random_ops.py) over
#                          SOAK_COMPARE_SEEDS seeds (default 100) of
#                          SOAK_COMPARE_OPS calls (default 400) on both
#                          backends
set -euo pipefail
cd "$(dirname "$0")/.."

what=${1:-all}
case $what in
  all | go | soak) ;;
  *) echo "usage: $0 [all|go|soak]" >&2; exit 2 ;;
esac

# The linter, pinned; `go run` builds it once into Go's cache.
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2

# A throwaway PostgreSQL server for the postgres backend's tests.
if [ -z "${COORDINATE_TEST_POSTGRES:-}" ]; then
  # Debian keeps initdb and pg_ctl off PATH, under /usr/lib/postgresql/N/bin.
  if ! command -v initdb >/dev/null 2>&1; then
    if ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
      echo "== installing postgresql"
      sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
      $sudo apt-get update -qq && $sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
    pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    PATH="$pgbin:$PATH"
  fi
  pgdir=$(mktemp -d)
  trap 'scripts/postgres.sh stop "$pgdir" || true; rm -rf "$pgdir"' EXIT
  COORDINATE_TEST_POSTGRES=$(scripts/postgres.sh start "$pgdir")
  export COORDINATE_TEST_POSTGRES
fi
echo "== PostgreSQL for tests: $COORDINATE_TEST_POSTGRES"

if [ "$what" = soak ]; then
  echo "== differential test, ${SOAK_SEEDS:-200} seeds"
  COORDINATE_DIFF_SEEDS=${SOAK_SEEDS:-200} go test -count=1 -timeout 0 -run '^TestDifferentialMemoryPostgres$' ./postgres
  echo "== three-daemon stress test, ${SOAK_SECONDS:-120} s"
  COORDINATE_STRESS_SECONDS=${SOAK_SECONDS:-120} go test -count=1 -timeout 0 -run '^TestStressDaemons$' ./postgres
  echo "== random calls compared with the Python daemon, ${SOAK_COMPARE_SEEDS:-100} seeds"
  scripts/pythontest.sh --setup-only
  soakbin=$(mktemp -d)
  go build -o "$soakbin/coordinated" ./cmd/coordinated
  for backend in memory "$COORDINATE_TEST_POSTGRES"; do
    COORDINATED_BIN=$soakbin/coordinated COORDINATED_BACKEND=$backend \
      COMPARE_RANDOM_SEEDS=${SOAK_COMPARE_SEEDS:-100} COMPARE_RANDOM_OPS=${SOAK_COMPARE_OPS:-400} \
      .venv-py27/bin/python -m pytest -p no:cacheprovider -q --rootdir=. \
      pythontest/compare/test_random_ops.py
  done
  rm -rf "$soakbin"
  exit 0
fi

# Headless Chromium for the web package's browser tests (they fail, never
# skip, without it). Screenshots land in $COORDINATE_TEST_ARTIFACTS.
if ! command -v chromium >/dev/null 2>&1; then
  echo "== installing chromium"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq && $sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
export COORDINATE_TEST_ARTIFACTS="${COORDINATE_TEST_ARTIFACTS:-$PWD/tmp/artifacts}"
mkdir -p "$COORDINATE_TEST_ARTIFACTS"
echo "== test artifacts (screenshots): $COORDINATE_TEST_ARTIFACTS"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi
echo "== go mod tidy -diff"
go mod tidy -diff
echo "== go vet"
go vet ./...
echo "== staticcheck"
go run "$STATICCHECK" ./...
# The Go tests of client/, cmd/coordinate and migrate run the real Python
# daemon and CLI from the Python 2.7 virtualenv (internal/testdaemon).
echo "== Python virtualenvs"
scripts/pythontest.sh --setup-only
export COORDINATE_TEST_PY27=${COORDINATE_TEST_PY27:-$PWD/.venv-py27}
echo "== go test -race"
go test -race -count=1 ./...
echo "== fuzz, a few seconds each (longer: make fuzz)"
# Budgets are execution counts (about 2-4 s each on the 2-core machine),
# not durations: with a duration, Go's fuzzing coordinator can report its
# own deadline as a failure with no failing input (go.dev/issue/75804,
# seen here with go1.26.8; fixed in Go 1.27). A count sets no deadline.
go test -run '^$' -fuzz '^FuzzValidate$' -fuzztime 200000x -fuzzminimizetime 1s ./internal/cborx
go test -run '^$' -fuzz '^FuzzAppendHead$' -fuzztime 140000x -fuzzminimizetime 1s ./internal/cborx
# journal replay, snapshot loading, record application (FuzzReplay writes files: one worker)
go test -run '^$' -fuzz '^FuzzReplay$' -fuzztime 1200x -fuzzminimizetime 1s -parallel 1 ./journal
go test -run '^$' -fuzz '^FuzzSnapshotLoad$' -fuzztime 15000x -fuzzminimizetime 1s ./memory
go test -run '^$' -fuzz '^FuzzDeltaLoad$' -fuzztime 18000x -fuzzminimizetime 1s ./memory
go test -run '^$' -fuzz '^FuzzRecordApply$' -fuzztime 50000x -fuzzminimizetime 1s ./memory

if [ "$what" = go ]; then exit 0; fi

echo "== python suites"
scripts/pythontest.sh
