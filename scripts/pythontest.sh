#!/usr/bin/env bash
# Runs the Python suites of pythontest/ against a real coordinated daemon:
#
#   wire    our own protocol tests, Python 3 + pytest + cbor2
#   legacy  the unchanged tests shipped inside the coordinate 0.1.5 package
#           (test_job_client, test_task_master, test_job_flow), Python 2.7,
#           repeated LEGACY_REPEAT times (default 20) in one session; on the
#           memory backend also durable (-sync group, $COORDINATED_SYNC),
#           DURABLE_REPEAT times (default 5)
#   cli     every `coordinate` subcommand and a real coordinate_worker,
#           Python 2.7 (pythontest/legacy/test_cli.py)
#   compare the real Python daemon (coordinate 0.1.5) and ours driven with
#           the same calls, typed replies compared; allowed differences
#           are the table in docs/compat.md (pythontest/compare)
#   dropin  our daemon taking over the real Python daemon's snapshot
#           directory with its command line, Python 2.7 (pythontest/dropin)
#
# each against the memory backend and, when COORDINATE_TEST_POSTGRES is set,
# again against PostgreSQL (a fresh database per suite when psql is there).
#
# It installs what it needs: virtualenvs .venv-py3/ and .venv-py27/ at the
# repository root (gitignored), from PyPI only, reused while their
# requirements file is unchanged. Python 2.7 comes from pyenv
# ($PYTHON27, else `pyenv root`/versions/2.7.18/bin/python).
#
# COORDINATED_BIN names a prebuilt daemon to test instead of building
# ./cmd/coordinated. Any suite that fails, cannot run, or collects no test
# fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

LEGACY_REPEAT=${LEGACY_REPEAT:-20}
DURABLE_REPEAT=${DURABLE_REPEAT:-5}
# Seconds one test may take before pytest-timeout fails it: a hung daemon
# must fail the run, not stall it until CI's own limit.
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
PYTHON3=${PYTHON3:-python3}

fail() { echo "pythontest: $*" >&2; exit 1; }

# --- virtualenvs -------------------------------------------------------------

# venv_ready DIR REQUIREMENTS: the venv exists and was built from this file.
venv_ready() {
  [ -x "$1/bin/python" ] && [ -f "$1/.requirements.sha256" ] &&
    [ "$(cat "$1/.requirements.sha256")" = "$(sha256sum <"$2" | cut -d' ' -f1)" ]
}

mark_ready() { sha256sum <"$2" | cut -d' ' -f1 >"$1/.requirements.sha256"; }

py3_reqs=pythontest/requirements-py3.txt
py27_reqs=pythontest/legacy/requirements-py27.txt

if ! venv_ready .venv-py3 "$py3_reqs"; then
  echo "== creating .venv-py3 ($($PYTHON3 --version 2>&1))"
  rm -rf .venv-py3
  "$PYTHON3" -m venv .venv-py3 || fail "cannot create a Python 3 venv with $PYTHON3"
  .venv-py3/bin/pip install -q -r "$py3_reqs" || fail "pip install -r $py3_reqs failed"
  mark_ready .venv-py3 "$py3_reqs"
fi

if [ -z "${PYTHON27:-}" ]; then
  if command -v pyenv >/dev/null; then
    PYTHON27="$(pyenv root)/versions/2.7.18/bin/python"
  elif [ -x "${PYENV_ROOT:-$HOME/.pyenv}/versions/2.7.18/bin/python" ]; then
    PYTHON27="${PYENV_ROOT:-$HOME/.pyenv}/versions/2.7.18/bin/python"
  else
    PYTHON27=python2.7
  fi
fi

# setup_py27: build .venv-py27 if needed and find the installed legacy tests.
# On failure it says why and returns 1; the Python 3 suite still runs and the
# legacy suites are reported as failed.
setup_py27() {
  if ! venv_ready .venv-py27 "$py27_reqs"; then
    if ! "$PYTHON27" --version >/dev/null 2>&1; then
      echo "pythontest: no Python 2.7 at $PYTHON27 (set PYTHON27, or install pyenv's 2.7.18)" >&2
      return 1
    fi
    echo "== creating .venv-py27 ($("$PYTHON27" --version 2>&1))"
    rm -rf .venv-py27
    if ! .venv-py3/bin/virtualenv -q -p "$PYTHON27" .venv-py27; then
      echo "pythontest: virtualenv could not create a Python 2.7 env from $PYTHON27" >&2
      return 1
    fi
    # The cbor C extension needs gcc and the Python 2 headers (pyenv has them).
    if ! .venv-py27/bin/pip install -q --no-python-version-warning -r "$py27_reqs"; then
      echo "pythontest: pip install -r $py27_reqs failed under Python 2.7" >&2
      return 1
    fi
    mark_ready .venv-py27 "$py27_reqs"
  fi
  if ! legacy_tests=$(.venv-py27/bin/python -c 'import os, coordinate.tests as t; print(os.path.dirname(t.__file__))'); then
    echo "pythontest: the coordinate package does not import under .venv-py27" >&2
    return 1
  fi
}

py27_ok=1
legacy_tests=
setup_py27 || py27_ok=0

# --setup-only: build the virtualenvs and stop. scripts/test.sh runs this
# before the Go tests, which start .venv-py27's Python daemon and CLI.
if [ "${1:-}" = --setup-only ]; then
  [ "$py27_ok" -eq 1 ] || fail "the Python 2.7 environment could not be set up"
  exit 0
fi

# --- the daemon --------------------------------------------------------------

work=$(mktemp -d)
dbs_to_drop=()
cleanup() {
  local db
  for db in "${dbs_to_drop[@]+"${dbs_to_drop[@]}"}"; do
    psql "$COORDINATE_TEST_POSTGRES" -q -v ON_ERROR_STOP=1 \
      -c "DROP DATABASE IF EXISTS \"$db\"" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${COORDINATED_BIN:-}" ]; then
  [ -x "$COORDINATED_BIN" ] || fail "COORDINATED_BIN=$COORDINATED_BIN is not executable"
  echo "== using coordinated at $COORDINATED_BIN"
else
  echo "== building coordinated"
  go build -o "$work/coordinated" ./cmd/coordinated || fail "go build ./cmd/coordinated failed"
  export COORDINATED_BIN="$work/coordinated"
fi
# The example Go worker, for pythontest/legacy/test_go_worker.py.
go build -o "$work/go-worker" ./examples/worker || fail "go build ./examples/worker failed"
export GO_WORKER_BIN="$work/go-worker"

# use_fresh_postgres SUFFIX: set $url to a new, empty database on the test
# server (dropped at exit), or to the test URL itself when psql is missing
# (the suites clear state themselves). Not for use in a subshell.
use_fresh_postgres() {
  if ! command -v psql >/dev/null; then
    echo "pythontest: psql not found; sharing $COORDINATE_TEST_POSTGRES (suites clear it)" >&2
    url=$COORDINATE_TEST_POSTGRES
    return
  fi
  local db="coordpy_$$_${RANDOM}_$1"
  psql "$COORDINATE_TEST_POSTGRES" -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE \"$db\"" >&2 ||
    fail "cannot create database $db on $COORDINATE_TEST_POSTGRES"
  dbs_to_drop+=("$db")
  url=$(.venv-py3/bin/python -c '
import sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
print(urllib.parse.urlunsplit(u._replace(path="/" + sys.argv[2])))
' "$COORDINATE_TEST_POSTGRES" "$db")
}

# --- the suites --------------------------------------------------------------

results=()
failed=0
total_passed=0
total_failed=0

# run_suite NAME BACKEND COMMAND...: run one pytest command, record its verdict.
# Exit status 5 (no tests collected) is a failure like any other.
run_suite() {
  local name=$1 backend=$2
  shift 2
  echo
  echo "== $name suite, backend ${backend%%\?*}"
  local status log="$work/suite.log" n
  set +e
  COORDINATED_BACKEND=$backend "$@" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  set -e
  # Add pytest's closing counts to the totals printed at the end.
  n=$(tail -n 1 "$log" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+' || true)
  total_passed=$((total_passed + ${n:-0}))
  n=$(tail -n 1 "$log" | grep -oE '[0-9]+ (failed|errors?)' | grep -oE '[0-9]+' | paste -sd+ - || true)
  total_failed=$((total_failed + ${n:-0}))
  if [ "$status" -eq 0 ]; then
    results+=("PASS  $name ($backend_label)")
  else
    case $status in
      5) results+=("FAIL  $name ($backend_label): no tests collected") ;;
      *) results+=("FAIL  $name ($backend_label): pytest exit status $status") ;;
    esac
    failed=$((failed + 1))
  fi
}

# run_legacy BACKEND REPEAT: the legacy client's own tests and ours,
# REPEAT times in one session.
run_legacy() {
  run_suite "legacy x$2" "$1" \
    .venv-py27/bin/python -m pytest -p no:cacheprovider -q \
    --timeout="$TEST_TIMEOUT" --count="$2" --repeat-scope=session \
    --rootdir="$repo" \
    pythontest/legacy --ignore=pythontest/legacy/test_cli.py \
    --ignore=pythontest/legacy/test_go_worker.py \
    "$legacy_tests/test_job_client.py" \
    "$legacy_tests/test_task_master.py" \
    "$legacy_tests/test_job_flow.py"
}

run_all() {
  local backend=$1
  local url
  backend_label=$2

  url=$backend; [ "$backend" = memory ] || use_fresh_postgres wire
  run_suite wire "$url" \
    .venv-py3/bin/python -m pytest -p no:cacheprovider -q --timeout="$TEST_TIMEOUT" pythontest/wire

  if [ "$py27_ok" -eq 0 ]; then
    results+=("FAIL  legacy and cli ($backend_label): the Python 2.7 environment could not be set up (see above)")
    failed=$((failed + 1))
    return
  fi

  url=$backend; [ "$backend" = memory ] || use_fresh_postgres legacy
  run_legacy "$url" "$LEGACY_REPEAT"

  url=$backend; [ "$backend" = memory ] || use_fresh_postgres cli
  run_suite cli "$url" \
    .venv-py27/bin/python -m pytest -p no:cacheprovider -q \
    --timeout="$TEST_TIMEOUT" --rootdir="$repo" pythontest/legacy/test_cli.py \
    pythontest/legacy/test_go_worker.py

  url=$backend; [ "$backend" = memory ] || use_fresh_postgres compare
  run_suite "compare with the Python daemon" "$url" \
    .venv-py27/bin/python -m pytest -p no:cacheprovider -q \
    --timeout="$TEST_TIMEOUT" --rootdir="$repo" pythontest/compare

  url=$backend; [ "$backend" = memory ] || use_fresh_postgres dropin
  run_suite dropin "$url" \
    .venv-py27/bin/python -m pytest -p no:cacheprovider -q \
    --timeout="$TEST_TIMEOUT" --rootdir="$repo" pythontest/dropin
}

run_all memory memory
# The legacy client against the durable default too (journal, group
# commit, replies written by the journal's flusher): fewer repeats.
if [ "$py27_ok" -eq 0 ]; then
  results+=("FAIL  legacy (durable memory): the Python 2.7 environment could not be set up (see above)")
  failed=$((failed + 1))
else
  backend_label="durable memory, -sync group"
  COORDINATED_SYNC=group run_legacy memory "$DURABLE_REPEAT"
fi
if [ -n "${COORDINATE_TEST_POSTGRES:-}" ]; then
  run_all "$COORDINATE_TEST_POSTGRES" postgres
else
  results+=("NOTE  PostgreSQL suites not run: COORDINATE_TEST_POSTGRES is not set")
fi

echo
echo "== python suites summary"
printf '%s\n' "${results[@]}"
echo "python: $total_passed passed, $total_failed failed"
[ "$failed" -eq 0 ] || fail "$failed python suite(s) failed"
