#!/usr/bin/env bash
# Runs every test of the project on a fresh machine: gofmt, go vet,
# staticcheck, `go mod tidy -diff`, the Go tests (with the race detector)
# including the conformance suite against every backend, and the Python
# suites against a running daemon. It starts a throwaway PostgreSQL itself
# unless COORDINATE_TEST_POSTGRES names one.
#
#   scripts/test.sh        everything (the README's `make test`, and CI)
#   scripts/test.sh go     the Go checks and tests only (`make test-go`)
set -euo pipefail
cd "$(dirname "$0")/.."

what=${1:-all}
case $what in
  all | go) ;;
  *) echo "usage: $0 [all|go]" >&2; exit 2 ;;
esac

# The linter, pinned; `go run` builds it once into Go's cache.
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2

# A throwaway PostgreSQL server for the postgres backend's tests.
if [ -z "${COORDINATE_TEST_POSTGRES:-}" ]; then
  pgdir=$(mktemp -d)
  trap 'scripts/postgres.sh stop "$pgdir" || true; rm -rf "$pgdir"' EXIT
  COORDINATE_TEST_POSTGRES=$(scripts/postgres.sh start "$pgdir")
  export COORDINATE_TEST_POSTGRES
fi
echo "== PostgreSQL for tests: $COORDINATE_TEST_POSTGRES"

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

if [ "$what" = go ]; then exit 0; fi

echo "== python suites"
scripts/pythontest.sh
