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

. scripts/perflib.sh

# run_one CONFIG ROUND: one daemon, one drainN run; JSON lines (each with
# the daemon's peak RSS) to $work/results.
run_one() {
  local config=$1 round=$2 hwm
  start_daemon "$config" "perfscale_${round}_$$"
  "$work/coordbench" -addr "127.0.0.1:$daemon_port" -conns "$CONNS" -workload drainN \
    -queued "$QUEUED" -sample "$SAMPLE" -per-call "$PER_CALL" -settle "$SETTLE" \
    -timeout 60m -json >"$work/run"
  hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$daemon_pid/status")
  python3 -c '
import json, sys
for line in open(sys.argv[3]):
    r = json.loads(line)
    r["config"], r["peak_rss_kb"] = sys.argv[1], int(sys.argv[2])
    print(json.dumps(r))' "$config" "$hwm" "$work/run" >>"$work/results"
  stop_daemon
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
