#!/usr/bin/env bash
# PostgreSQL's own counters for cmd/coordbench workloads, which a loaded
# machine moves far less than it moves units/s (docs/postgres.md,
# "Fourth pass"): per run, committed transactions, WAL fsyncs,
# pg_stat_statements calls and time (planning included when the server
# tracks it), and the CPU seconds of the PostgreSQL server, the daemon and
# coordbench (from /proc). Each run gets a fresh daemon and database;
# daemons named in BINS alternate run by run (the order flips each round).
#
#   BINS="old=/tmp/old/coordinated new=/tmp/new/coordinated" \
#     WORKLOADS=chain,weighted RUNS=3 UNITS=10000 scripts/pgcounters.sh
#
# The server must be local and load pg_stat_statements: the throwaway one
# perflib.sh starts does, as
#   POSTGRES_OPTIONS="-c shared_preload_libraries=pg_stat_statements
#     -c pg_stat_statements.track_planning=on" scripts/pgcounters.sh
# or set COORDINATE_TEST_POSTGRES to such a server, which must run nothing
# else meanwhile (WAL fsyncs and CPU are the whole server's). JSON lines go to
# $OUT (default /tmp/pgcounters.jsonl), the medians and ranges to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

WORKLOADS=${WORKLOADS:-chain,weighted}
RUNS=${RUNS:-3}
UNITS=${UNITS:-10000}
CONNS=${CONNS:-8}
OUT=${OUT:-/tmp/pgcounters.jsonl}
CONFIGS=postgres

. scripts/perflib.sh
cp "$work/coordinated" "$work/coordinated.this"
BINS=${BINS:-"this=$work/coordinated.this"}

# psql_db SQL: one value from the daemon's database.
psql_db() { psql "$daemon_url" -qAtc "$1"; }

# server_cpu: CPU ticks of the server: its children, those it reaped, itself.
server_cpu() {
  python3 - "$postmaster" <<'EOF'
import os, sys
pm = sys.argv[1]
def stat(pid):
    return open('/proc/%s/stat' % pid).read().rsplit(')', 1)[1].split()
s = stat(pm)
t = sum(int(x) for x in s[11:15])
for p in os.listdir('/proc'):
    if p.isdigit():
        try:
            s = stat(p)
        except OSError:
            continue
        if s[1] == pm:
            t += int(s[11]) + int(s[12])
print(t)
EOF
}

# run_one LABEL BIN WORKLOAD: one daemon, one coordbench run, one JSON line.
run_one() {
  local label=$1 bin=$2 workload=$3
  cp "$bin" "$work/coordinated"
  start_daemon postgres "pgcounters_$$"
  daemon_url=$(python3 -c 'import sys,urllib.parse as u; p=u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/"+sys.argv[2])))' "$COORDINATE_TEST_POSTGRES" "$daemon_db")
  psql_db "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
  postmaster=$(head -n 1 "$(psql_db 'SHOW data_directory')/postmaster.pid" 2>/dev/null) ||
    { echo "pgcounters: the server is not on this machine (or the user cannot read data_directory)" >&2; exit 1; }
  psql_db "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0),
    pg_stat_reset_shared('wal')" >/dev/null
  local x0 c0 c1 dcpu load res
  x0=$(psql_db "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
  c0=$(server_cpu)
  load=$(cut -d' ' -f1 /proc/loadavg)
  res=$(/usr/bin/time -f '%U %S' -o "$work/time" "$work/coordbench" -addr "127.0.0.1:$daemon_port" \
    -conns "$CONNS" -units "$UNITS" -workload "$workload" -json | tail -n 1)
  c1=$(server_cpu)
  dcpu=$(python3 -c "s = open('/proc/$daemon_pid/stat').read().rsplit(')', 1)[1].split(); print(int(s[11]) + int(s[12]))")
  # The counts are read after the daemon's sessions end: an idle
  # PostgreSQL 15 backend holds its statistics back for up to 10 s.
  kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
  sleep 1.5
  psql "$daemon_url" -qAt >"$work/counts" <<'SQL'
SELECT xact_commit FROM pg_stat_database WHERE datname = current_database();
SELECT wal_sync FROM pg_stat_wal;
SELECT json_agg(t) FROM (
  SELECT left(regexp_replace(query, '\s+', ' ', 'g'), 70) AS q, calls,
    round(total_exec_time::numeric, 1) AS exec_ms, round(total_plan_time::numeric, 1) AS plan_ms
  FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  ORDER BY total_exec_time + total_plan_time DESC) t;
SQL
  stop_daemon 2>/dev/null || true # drops the database; the daemon is gone already
  python3 - "$label" "$workload" "$res" "$x0" "$c0" "$c1" "$dcpu" "$(cat "$work/time")" "$load" "$work/counts" >>"$OUT" <<'EOF'
import json, os, sys
label, wl, res, x0, c0, c1, dcpu, bt, load, counts = sys.argv[1:]
x1, wal, stmts = open(counts).read().split('\n', 2)
stmts = json.loads(stmts) or []
hz = os.sysconf('SC_CLK_TCK')
print(json.dumps(dict(
    label=label, workload=wl, units_per_s=round(json.loads(res)['units_per_s']), load=float(load),
    xacts=int(x1) - int(x0), wal_sync=int(wal),
    stmt_calls=sum(s['calls'] for s in stmts),
    stmt_ms=round(sum(float(s['exec_ms']) + float(s['plan_ms']) for s in stmts), 1),
    pg_cpu=round((int(c1) - int(c0)) / hz, 2), daemon_cpu=round(int(dcpu) / hz, 2),
    bench_cpu=round(sum(float(x) for x in bt.split()), 2), stmts=stmts[:10])))
EOF
}

: >"$OUT"
for round in $(seq "$RUNS"); do
  for workload in ${WORKLOADS//,/ }; do
    bins=($BINS)
    if (( round % 2 == 0 )); then bins=($(printf '%s\n' "${bins[@]}" | tac)); fi
    for b in "${bins[@]}"; do
      echo "round $round: $workload, ${b%%=*}" >&2
      run_one "${b%%=*}" "${b#*=}" "$workload"
    done
  done
done

python3 - "$OUT" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = ['units_per_s', 'xacts', 'wal_sync', 'stmt_calls', 'stmt_ms', 'pg_cpu', 'daemon_cpu', 'bench_cpu', 'load']
print('| workload | daemon | runs | ' + ' | '.join(keys) + ' |')
print('|---|---|---|' + '---|' * len(keys))
seen = []
for r in rows:
    if (r['workload'], r['label']) not in seen:
        seen.append((r['workload'], r['label']))
for wl, label in seen:
    rs = [r for r in rows if r['workload'] == wl and r['label'] == label]
    cells = []
    for k in keys:
        v = [r[k] for r in rs]
        m = statistics.median(v)
        cells.append('%g' % m if len(v) == 1 else '%g (%g-%g)' % (m, min(v), max(v)))
    print('| %s | %s | %d | %s |' % (wl, label, len(rs), ' | '.join(cells)))
EOF
