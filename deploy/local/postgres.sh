#!/usr/bin/env bash
# A private PostgreSQL 15 cluster on loopback for development and tests, run without systemd.
#
#   deploy/local/postgres.sh start          initialise var/postgres on first use, start the server
#                                           (returns 0 at once if one answers on the port)
#   deploy/local/postgres.sh stop           fast shutdown (running transactions are rolled back)
#   deploy/local/postgres.sh status         exit 0 if the server answers
#   deploy/local/postgres.sh createdb NAME  create database NAME if it is missing
#   deploy/local/postgres.sh dropdb NAME    drop database NAME if it exists (tests)
#   deploy/local/postgres.sh psql ARGS      psql as the superuser `grocer`
#   deploy/local/postgres.sh url [NAME]     print the GROCER_DATABASE_URL of database NAME
#
# Environment:
#   GROCER_POSTGRES_PORT   port on 127.0.0.1 (default 5432)
#   GROCER_VAR_DIR         state folder (default <project>/var); the cluster lives in its postgres/
#   GROCER_POSTGRES_VIA    what `url` connects through: socket (the cluster's Unix socket in its
#                          folder, default, when it is there) or tcp (127.0.0.1:PORT)
#
# Superuser `grocer`, trust authentication, listening on 127.0.0.1 only. The server refuses to
# run as root, so as root the cluster folder belongs to Debian's `postgres` user and the server
# tools run as that user (PLATFORM.md).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
VAR_DIR="${GROCER_VAR_DIR:-$PROJECT_ROOT/var}"
BASE="$VAR_DIR/postgres"
DATA="$BASE/data"
LOG="$BASE/postgres.log"
PORT="${GROCER_POSTGRES_PORT:-5432}"
BIN=/usr/lib/postgresql/15/bin
SUPERUSER=grocer

log() { echo "postgres: $*" >&2; }

# Runs a server tool as the cluster's owner: the postgres user when we are root.
as_owner() {
  if ((EUID == 0)); then
    local quoted
    printf -v quoted '%q ' "$@"
    su postgres -s /bin/bash -c "$quoted"
  else
    "$@"
  fi
}

answers() { "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" >/dev/null 2>&1; }

psql_super() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U "$SUPERUSER" "$@"; }

initialise() {
  [[ -s "$DATA/PG_VERSION" ]] && return 0
  [[ -x "$BIN/initdb" ]] || { log "PostgreSQL 15 is not installed (make deps installs it)"; exit 1; }
  log "initialising a cluster in $DATA"
  mkdir -p "$DATA"
  if ((EUID == 0)); then
    # Every folder above the cluster must be searchable by postgres, and the cluster its own.
    chown -R postgres:postgres "$BASE"
    chmod 700 "$DATA"
    local folder="$BASE"
    while [[ "$folder" != "/" ]]; do
      folder="$(dirname "$folder")"
      chmod o+x "$folder" 2>/dev/null || true
    done
  fi
  # The C locale sorts and compares text byte by byte, as SQLite does (catalogue pages by SKU).
  as_owner "$BIN/initdb" -D "$DATA" -U "$SUPERUSER" --auth=trust -E UTF8 --locale=C --no-instructions >"$BASE/initdb.log" 2>&1 ||
    { cat "$BASE/initdb.log" >&2; exit 1; }
  # Loopback only; a socket folder of our own (the packaged /var/run/postgresql may not exist).
  cat >>"$DATA/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$BASE'
max_connections = 200
shared_buffers = 128MB
EOF
}

# Statement statistics for the benchmarks (Benchmarks/order); added to a cluster made without
# them, taking effect at its next start.
preload_statement_statistics() {
  grep -q "^shared_preload_libraries = 'pg_stat_statements'" "$DATA/postgresql.conf" && return 0
  echo "shared_preload_libraries = 'pg_stat_statements'" | as_owner tee -a "$DATA/postgresql.conf" >/dev/null
}

start() {
  if answers; then return 0; fi
  initialise
  preload_statement_statistics
  # A stale pid file from a killed server would stop pg_ctl; the server checks it is stale itself.
  as_owner "$BIN/pg_ctl" -D "$DATA" -o "-p $PORT" -l "$LOG" -w -t 30 start >/dev/null ||
    { tail -20 "$LOG" >&2; exit 1; }
  for _ in $(seq 1 50); do answers && break; sleep 0.1; done
  answers || { log "the server did not answer on 127.0.0.1:$PORT"; tail -20 "$LOG" >&2; exit 1; }
  log "running on 127.0.0.1:$PORT (data $DATA)"
}

stop() {
  [[ -s "$DATA/PG_VERSION" ]] || return 0
  as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null 2>&1 || true
}

createdb() {
  local name="$1"
  [[ "$name" =~ ^[a-z_][a-z0-9_]*$ ]] || { log "bad database name: $name"; exit 2; }
  if [[ -z "$(psql_super -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = '$name'")" ]]; then
    psql_super -d postgres -c "CREATE DATABASE $name"
  fi
}

dropdb() {
  local name="$1"
  [[ "$name" =~ ^[a-z_][a-z0-9_]*$ ]] || { log "bad database name: $name"; exit 2; }
  psql_super -d postgres -c "DROP DATABASE IF EXISTS $name WITH (FORCE)"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status)
    if answers; then echo "running: 127.0.0.1:$PORT answers"; else echo "not running: 127.0.0.1:$PORT"; exit 1; fi ;;
  createdb) createdb "${2:?database name}" ;;
  dropdb) dropdb "${2:?database name}" ;;
  psql) shift; psql_super "$@" ;;
  url)
    # The socket is this folder's cluster's: a server of another folder answering on the port
    # (one `start` found running) is reached over TCP.
    via="${GROCER_POSTGRES_VIA:-socket}"
    [[ "$via" != socket || -S "$BASE/.s.PGSQL.$PORT" ]] || via=tcp
    case "$via" in
      socket) echo "postgresql://$SUPERUSER@/${2:-postgres}?host=$BASE&port=$PORT" ;;
      tcp) echo "postgresql://$SUPERUSER@127.0.0.1:$PORT/${2:-postgres}" ;;
      *) echo "GROCER_POSTGRES_VIA must be socket or tcp" >&2; exit 2 ;;
    esac ;;
  *) echo "usage: $0 start|stop|status|createdb NAME|dropdb NAME|psql ARGS...|url [NAME]" >&2; exit 2 ;;
esac
