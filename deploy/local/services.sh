#!/usr/bin/env bash
# Starts, stops and reports the Grocer services in the background (the table is in lib.sh).
#
#   deploy/local/services.sh start [NAME...]   start (idempotent), return once each is ready
#   deploy/local/services.sh stop [NAME...]    SIGTERM, wait up to 15 s, then SIGKILL
#   deploy/local/services.sh status [NAME...]  one line per service; exit 1 if any is down
#
# Runs the release build in $GROCER_BIN_DIR (default .build/release; `make run` builds it).
# Logs: var/log/<name>.log. Pid files: var/run/<name>.pid. Data: var/data/<folder>/.
set -euo pipefail
LOG_PREFIX=services.sh
# shellcheck source=deploy/local/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

READY_TIMEOUT="${GROCER_READY_TIMEOUT:-60}"

# GROCER_DB=postgres (`make run DB=postgres`) puts every service's data in a database of its own,
# grocer_<folder>, on the local PostgreSQL (deploy/local/postgres.sh); SQLite files otherwise.
DB_ENGINE="${GROCER_DB:-sqlite}"
case "$DB_ENGINE" in
  sqlite | postgres) ;;
  *) die "GROCER_DB must be sqlite or postgres, not $DB_ENGINE" ;;
esac
POSTGRES_SCRIPT="$(dirname "${BASH_SOURCE[0]}")/postgres.sh"

# Sets GROCER_DATABASE_URL for the service with data folder $1 (creating its database), or
# clears it for SQLite.
database_for() {
  local folder=$1
  if [[ "$DB_ENGINE" == postgres ]]; then
    bash "$POSTGRES_SCRIPT" start
    bash "$POSTGRES_SCRIPT" createdb "grocer_$folder"
    GROCER_DATABASE_URL="$(bash "$POSTGRES_SCRIPT" url "grocer_$folder")"
    export GROCER_DATABASE_URL
  else
    unset GROCER_DATABASE_URL
  fi
}

# Runs "${@:3}" with the environment of a service on port $1 with data folder $2.
with_service_env() {
  local port=$1 folder=$2
  shift 2
  GROCER_HTTP_PORT="$port" GROCER_DATA_DIR="$DATA_DIR/$folder" "$@"
}

start_one() {
  local name=$1 port=$2 folder=$3 setup=$4
  local bin="$BIN_DIR/$name" pidfile="$RUN_DIR/$name.pid" logfile="$LOG_DIR/$name.log" pid
  [[ -x "$bin" ]] || die "$bin is missing: build first (make build)"
  mkdir -p "$LOG_DIR" "$RUN_DIR" "$DATA_DIR/$folder"

  if pid="$(live_pid "$pidfile" "$name")"; then
    log "$name already running (pid $pid)"
  else
    if port_answers "$port"; then
      die "port $port is taken by another process; cannot start $name (stop it or set its port)"
    fi
    database_for "$folder"
    if [[ "$setup" != - ]]; then
      # One marker per engine: the demo data of one is not in the other.
      local marker="$DATA_DIR/$folder/.setup-$setup.done"
      [[ "$DB_ENGINE" == sqlite ]] || marker="$DATA_DIR/$folder/.setup-$setup-$DB_ENGINE.done"
      if [[ ! -e "$marker" ]]; then
        log "$name $setup (once, into ${GROCER_DATABASE_URL:-$DATA_DIR/$folder})"
        if ! with_service_env "$port" "$folder" "$bin" "$setup" >>"$logfile" 2>&1 </dev/null; then
          tail -n 30 "$logfile" >&2
          die "$name $setup failed; see $logfile"
        fi
        # Only a set-up that left something in the data dir (or ran against a server) counts as done.
        if [[ "$DB_ENGINE" != sqlite || -n "$(ls -A "$DATA_DIR/$folder")" ]]; then touch "$marker"; fi
      fi
    fi
    log "starting $name on 127.0.0.1:$port (${GROCER_DATABASE_URL:-SQLite}, log $logfile)"
    echo "--- $(date -u +%FT%TZ) start" >>"$logfile"
    # A plain command (not a function) so that $! is the service's own pid.
    GROCER_HTTP_PORT="$port" GROCER_DATA_DIR="$DATA_DIR/$folder" nohup "$bin" >>"$logfile" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$pidfile"
  fi

  if ! wait_http_ok "http://127.0.0.1:$port/health/ready" "$READY_TIMEOUT" "$pid"; then
    log "last lines of $logfile:"
    tail -n 30 "$logfile" >&2
    if alive "$pid"; then terminate "$pid" 15; fi
    rm -f "$pidfile"
    die "$name did not become ready"
  fi
  log "$name ready: http://127.0.0.1:$port"
}

stop_one() {
  local name=$1 pidfile="$RUN_DIR/$1.pid" pid
  if pid="$(live_pid "$pidfile" "$name")"; then
    log "stopping $name (pid $pid)"
    terminate "$pid" 15
  else
    log "$name not running"
  fi
  rm -f "$pidfile"
}

status_one() {
  local name=$1 port=$2 pid
  if pid="$(live_pid "$RUN_DIR/$name.pid" "$name")"; then
    if [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
      "http://127.0.0.1:$port/health/ready" 2>/dev/null)" == 200 ]]; then
      echo "$name: ready (pid $pid, http://127.0.0.1:$port)"
    else
      echo "$name: running but not ready (pid $pid, http://127.0.0.1:$port)"
      return 1
    fi
  else
    echo "$name: stopped"
    return 1
  fi
}

# Prints the table lines of the named services (all when none is named), in table order.
selected() {
  local line wanted
  for line in "${SERVICES[@]}"; do
    if (($# == 0)); then echo "$line"; continue; fi
    for wanted in "$@"; do [[ "${line%% *}" == "$wanted" ]] && echo "$line"; done
  done
}

command=${1:-}
shift || true
lines=()
mapfile -t lines < <(selected "$@")
(($# == 0 || ${#lines[@]} > 0)) || die "no such service: $*"

case "$command" in
  start)
    for line in "${lines[@]}"; do
      # shellcheck disable=SC2086
      start_one $line
    done
    ;;
  stop)
    # Reverse order: the last started stops first.
    for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
      # shellcheck disable=SC2086
      stop_one ${lines[i]}
    done
    ;;
  status)
    rc=0
    for line in "${lines[@]}"; do
      # shellcheck disable=SC2086
      status_one $line || rc=1
    done
    exit "$rc"
    ;;
  *)
    echo "usage: $0 start|stop|status [NAME...]" >&2
    exit 2
    ;;
esac
