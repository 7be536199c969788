# Shared by scripts/perftable.sh and scripts/perfscale.sh (sourced, not
# run): a work directory removed on exit, the daemon and load generator
# built into it, a throwaway PostgreSQL when CONFIGS names postgres and
# COORDINATE_TEST_POSTGRES does not name one, and one daemon per
# configuration.
#
# The caller sets CONFIGS before sourcing. COORDINATED_BIN measures another
# build of the daemon (an A/B against an older commit, say); by default
# this tree's is built.

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

# start_daemon CONFIG DBNAME: starts a daemon for CONFIG (volatile,
# postgres, or a -sync policy of the durable memory backend) and waits
# until it listens. Sets daemon_pid and daemon_port; for postgres it
# creates database DBNAME, which stop_daemon drops.
start_daemon() {
  local config=$1 args
  daemon_db=""
  daemon_port=$(free_port)
  case $config in
    volatile) args=(-backend memory: ) ;;
    postgres)
      daemon_db=$2
      psql "$COORDINATE_TEST_POSTGRES" -qc "CREATE DATABASE $daemon_db" >/dev/null
      args=(-backend "$(python3 -c 'import sys,urllib.parse as u; p=u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/"+sys.argv[2])))' "$COORDINATE_TEST_POSTGRES" "$daemon_db")") ;;
    *) rm -rf "$work/data"; args=(-data-dir "$work/data" -sync "$config") ;;
  esac
  "$work/coordinated" -listen "127.0.0.1:$daemon_port" "${args[@]}" -log-level warn 2>>"$work/daemon.log" &
  daemon_pid=$!
  pids+=("$daemon_pid")
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$daemon_port") 2>/dev/null && break
    sleep 0.1
  done
}

# stop_daemon: stops the daemon start_daemon started and removes its data.
stop_daemon() {
  kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
  if [ -n "$daemon_db" ]; then psql "$COORDINATE_TEST_POSTGRES" -qc "DROP DATABASE $daemon_db" >/dev/null; fi
  rm -rf "$work/data"
}
