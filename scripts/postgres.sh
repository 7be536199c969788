#!/usr/bin/env bash
# Throwaway PostgreSQL server for tests and benchmarks.
#
#   scripts/postgres.sh start DIR   initdb into DIR, start a server on a free
#                                   127.0.0.1 port, create database
#                                   "coordinate", print ONLY its URL
#   scripts/postgres.sh stop DIR    stop the server started in DIR
#
# Needs only initdb, pg_ctl and postgres on PATH. PostgreSQL refuses to run
# as root, so as root the server runs as the "postgres" system user (or
# "nobody" when there is none) and DIR is handed to that user. Durability
# settings are the defaults (fsync, synchronous_commit on). Extra server
# settings may be given in POSTGRES_OPTIONS, e.g. "-c shared_buffers=1GB"
# for benchmarks at depth (docs/postgres.md). Everything except the URL
# goes to stderr or to DIR/postgres.log.
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
dir=$(cd "$2" && pwd)
data="$dir/data"
dbname=coordinate
dbuser=postgres

# as_owner runs a command as the user that owns the cluster.
runas=""
if [ "$(id -u)" -eq 0 ]; then
  if getent passwd postgres >/dev/null; then runas=postgres; else runas=nobody; fi
fi
as_owner() {
  if [ -z "$runas" ]; then
    "$@"
  elif command -v runuser >/dev/null; then
    runuser -u "$runas" -- "$@"
  else
    su -s /bin/sh "$runas" -c "$(printf '%q ' "$@")"
  fi
}

# port_in_use reports whether something already listens on 127.0.0.1:$1.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
  if [ -n "$runas" ]; then chown "$runas" "$dir"; fi
  as_owner initdb -D "$data" -U "$dbuser" --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  # Create the database in single-user mode: no psql or createdb needed.
  echo "CREATE DATABASE $dbname" | as_owner postgres --single -D "$data" postgres >"$dir/createdb.log" 2>&1 ||
    { cat "$dir/createdb.log" >&2; exit 1; }
  # A free port: try random ports until the server starts on one (another
  # process may grab a port between the check and the start).
  local attempt port
  for attempt in $(seq 1 20); do
    port=$((20000 + RANDOM % 40000))
    port_in_use "$port" && continue
    if as_owner pg_ctl -D "$data" -l "$dir/postgres.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=300 -c max_wal_size=4GB -c fsync=on -c synchronous_commit=on ${POSTGRES_OPTIONS:-}" \
        start >&2; then
      echo "$port" >"$dir/port"
      echo "postgres://$dbuser@127.0.0.1:$port/$dbname?sslmode=disable"
      return 0
    fi
    echo "postgres.sh: start on port $port failed (attempt $attempt); see $dir/postgres.log" >&2
  done
  exit 1
}

stop() {
  [ -f "$data/postmaster.pid" ] || return 0
  as_owner pg_ctl -D "$data" -m fast -w -t 60 stop >&2
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
