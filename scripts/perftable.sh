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

. scripts/perflib.sh

# run_one CONFIG CONNS ROUND: one daemon, one coordbench run; JSON lines to
# $work/results.
run_one() {
  local config=$1 conns=$2 round=$3
  start_daemon "$config" "perf_${round}_${conns}_$$"
  "$work/coordbench" -addr "127.0.0.1:$daemon_port" -conns "$conns" -units "$UNITS" \
    -workload "$WORKLOADS" -json |
    python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    r["config"], r["conns"] = sys.argv[1], int(sys.argv[2])
    print(json.dumps(r))' "$config" "$conns" >>"$work/results"
  stop_daemon
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
