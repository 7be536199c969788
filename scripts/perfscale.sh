#!/usr/bin/env bash
# Flat to ten million: for each storage choice, drain a sample of units
# from a shallow queue and from a deep one (cmd/coordbench's drainN:
# preload DEPTH units into one spec, then drain SAMPLE of them with 8
# connections), and report the preload rate, both drain rates, their
# ratio, and the daemon's peak RSS (VmHWM) over the run.
#
#   scripts/perfscale.sh                       (make perf-scale)
#   QUEUED=10000,1000000 CONFIGS="group" scripts/perfscale.sh
#   PER_CALL=100 SETTLE=75s CONFIGS=postgres scripts/perfscale.sh
#
# A 10,000,000-unit run needs about 5 GB (volatile) to 9 GB (durable) of
# memory and several minutes per configuration. It starts a throwaway
# PostgreSQL unless COORDINATE_TEST_POSTGRES names one (a database per
# run is created and dropped there).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-1}
QUEUED=${QUEUED:-10000,10000000}
SAMPLE=${SAMPLE:-30000}
PER_CALL=${PER_CALL:-1}
CONNS=${CONNS:-8}
SETTLE=${SETTLE:-0s}
CONFIGS=${CONFIGS:-"volatile group postgres"}

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "${pgdir:-}" ]; then scripts/postgres.sh stop "$pgdir" >/dev/null 2>&1 || true; rm -rf "$pgdir"; fi
  rm -rf "$work"
}
trap cleanup EXIT

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

# run_one CONFIG ROUND: one daemon, one drainN run; JSON lines (each with
# the daemon's peak RSS) to $work/results.
run_one() {
  local config=$1 round=$2 port args db="" hwm
  port=$(free_port)
  case $config in
    volatile) args=(-backend memory: ) ;;
    postgres)
      db="perfscale_${round}_$$"
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
  "$work/coordbench" -addr "127.0.0.1:$port" -conns "$CONNS" -workload drainN \
    -queued "$QUEUED" -sample "$SAMPLE" -per-call "$PER_CALL" -settle "$SETTLE" \
    -timeout 60m -json >"$work/run"
  hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
  python3 -c '
import json, sys
for line in open(sys.argv[3]):
    r = json.loads(line)
    r["config"], r["peak_rss_kb"] = sys.argv[1], int(sys.argv[2])
    print(json.dumps(r))' "$config" "$hwm" "$work/run" >>"$work/results"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  if [ -n "$db" ]; then psql "$COORDINATE_TEST_POSTGRES" -qc "DROP DATABASE $db" >/dev/null; fi
  rm -rf "$work/data"
}

for round in $(seq "$RUNS"); do
  for config in $CONFIGS; do
    echo "round $round: $config" >&2
    run_one "$config" "$round"
  done
done

python3 - "$work/results" "$CONFIGS" "$QUEUED" <<'EOF'
import json, statistics, sys
path, configs, depths = sys.argv[1], sys.argv[2].split(), [int(d) for d in sys.argv[3].split(',')]
rates, rss = {}, {}
for line in open(path):
    r = json.loads(line)
    name, at = r['workload'].split('@')
    kind = 'preload' if name == 'preload' else 'drain'
    rates.setdefault((r['config'], kind, int(at)), []).append(r['units_per_s'])
    rss.setdefault(r['config'], set()).add(r['peak_rss_kb'])
def med(v):
    return statistics.median(v) if v else None
def fmt(v):
    return '-' if v is None else '%.1fk' % (v / 1000)
shallow, deep = depths[0], depths[-1]
print('| storage | preload@%d | drain@%d | drain@%d | ratio | peak RSS |' % (deep, shallow, deep))
print('|---|---|---|---|---|---|')
for cfg in configs:
    p = med(rates.get((cfg, 'preload', deep), []))
    a = med(rates.get((cfg, 'drain', shallow), []))
    b = med(rates.get((cfg, 'drain', deep), []))
    ratio = '-' if not (a and b) else '%.2f' % (b / a)
    peak = '%.2f GB' % (max(rss.get(cfg, {0})) / 1e6)
    print('| %s | %s | %s | %s | %s | %s |' % (cfg, fmt(p), fmt(a), fmt(b), ratio, peak))
EOF
