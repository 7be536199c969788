#!/usr/bin/env bash
# The README's performance table: units/s through the wire for every
# storage choice (volatile memory, the durable memory backend with each
# -sync policy, PostgreSQL) at 8 and 64 connections, with cmd/coordbench's
# drain1, drain100, chain and weighted workloads. Each configuration gets
# a fresh daemon (and a fresh database); RUNS rounds go through every
# configuration in turn and the table shows the median and range.
#
#   scripts/perftable.sh            (make perf-table)
#   RUNS=3 UNITS=20000 CONNS="8 64" scripts/perftable.sh
#   COORDINATED_BIN=/tmp/old/coordinated CONFIGS="volatile group" scripts/perftable.sh
#
# It starts a throwaway PostgreSQL unless COORDINATE_TEST_POSTGRES names
# one (a database per run is created and dropped there).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
UNITS=${UNITS:-20000}
CONNS=${CONNS:-"8 64"}
WORKLOADS=drain1,drain100,chain,weighted
CONFIGS=${CONFIGS:-"volatile group interval=2ms none postgres"}

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "${pgdir:-}" ]; then scripts/postgres.sh stop "$pgdir" >/dev/null 2>&1 || true; rm -rf "$pgdir"; fi
  rm -rf "$work"
}
trap cleanup EXIT

# COORDINATED_BIN measures another build of the daemon (an A/B against
# an older commit, say); by default this tree's is built.
if [ -n "${COORDINATED_BIN:-}" ]; then
  cp "$COORDINATED_BIN" "$work/coordinated"
else
  go build -o "$work/coordinated" ./cmd/coordinated
fi
go build -o "$work/coordbench" ./cmd/coordbench

if [[ " $CONFIGS " == *" postgres "* ]] && [ -z "${COORDINATE_TEST_POSTGRES:-}" ]; then
  pgdir=$(mktemp -d)
  COORDINATE_TEST_POSTGRES=$(scripts/postgres.sh start "$pgdir")
fi

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# run_one CONFIG CONNS ROUND: one daemon, one coordbench run; JSON lines to
# $work/results.
run_one() {
  local config=$1 conns=$2 round=$3 port args db=""
  port=$(free_port)
  case $config in
    volatile) args=(-backend memory: ) ;;
    postgres)
      db="perf_${round}_${conns}_$$"
      psql "$COORDINATE_TEST_POSTGRES" -qc "CREATE DATABASE $db" >/dev/null
      args=(-backend "$(python3 -c 'import sys,urllib.parse as u; p=u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/"+sys.argv[2])))' "$COORDINATE_TEST_POSTGRES" "$db")") ;;
    *) rm -rf "$work/data"; args=(-data-dir "$work/data" -sync "$config") ;;
  esac
  "$work/coordinated" -listen "127.0.0.1:$port" "${args[@]}" -log-level warn 2>>"$work/daemon.log" &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
  "$work/coordbench" -addr "127.0.0.1:$port" -conns "$conns" -units "$UNITS" \
    -workload "$WORKLOADS" -json |
    python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    r["config"], r["conns"] = sys.argv[1], int(sys.argv[2])
    print(json.dumps(r))' "$config" "$conns" >>"$work/results"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  if [ -n "$db" ]; then psql "$COORDINATE_TEST_POSTGRES" -qc "DROP DATABASE $db" >/dev/null; fi
  rm -rf "$work/data"
}

for round in $(seq "$RUNS"); do
  for conns in $CONNS; do
    for config in $CONFIGS; do
      echo "round $round: $config, $conns connections" >&2
      run_one "$config" "$conns" "$round"
    done
  done
done

python3 - "$work/results" "$CONFIGS" "$CONNS" "$WORKLOADS" <<'EOF'
import json, statistics, sys
path, configs, conns, workloads = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split(',')
rates = {}
for line in open(path):
    r = json.loads(line)
    name = r['workload']
    rate = r['units_per_s']
    rates.setdefault((r['config'], r['conns'], name), []).append(rate)
def fmt(v):
    return '%.1fk' % (v / 1000)
print('| storage | conns | ' + ' | '.join(workloads) + ' |')
print('|---|---|' + '---|' * len(workloads))
for c in conns:
    for cfg in configs:
        cells = []
        for w in workloads:
            v = rates.get((cfg, int(c), w))
            if not v:
                cells.append('-')
            elif len(v) == 1:
                cells.append(fmt(v[0]))
            else:
                cells.append('%s (%s-%s)' % (fmt(statistics.median(v)), fmt(min(v)), fmt(max(v))))
        print('| %s | %s | %s |' % (cfg, c, ' | '.join(cells)))
EOF
