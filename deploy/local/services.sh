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
# Replicas on one host share its cores: each gets its share of HTTP threads (two StockService
# replicas with one thread each served 1.18x one replica at 64 connections on 2 cores, with two
# each 0.87x; Benchmarks/README.md, issue 23). One replica gets every core, the default.
CORES="$(nproc)"
HTTP_THREADS="${GROCER_HTTP_THREADS:-$(((CORES + REPLICAS - 1) / REPLICAS))}"

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
    # OrderService's replicas share the simulated provider's ledger too, as they would a provider.
    if [[ "$folder" == order ]]; then
      bash "$POSTGRES_SCRIPT" createdb grocer_order_payments
      GROCER_PAYMENT_SIM_DATABASE_URL="$(bash "$POSTGRES_SCRIPT" url grocer_order_payments)"
      export GROCER_PAYMENT_SIM_DATABASE_URL
    fi
  else
    unset GROCER_DATABASE_URL GROCER_PAYMENT_SIM_DATABASE_URL
  fi
}

# Runs "${@:3}" with the environment of a service on port $1 with data folder $2.
with_service_env() {
  local port=$1 folder=$2
  shift 2
  GROCER_HTTP_PORT="$port" GROCER_DATA_DIR="$DATA_DIR/$folder" "$@"
}

# The file stem of replica $2 of service $1: the first keeps the plain name (var/log/<name>.log).
replica_stem() { if (($2 == 1)); then echo "$1"; else echo "$1-$2"; fi; }

start_one() {
  local name=$1 port=$2 folder=$3 setup=$4
  local bin="$BIN_DIR/$name" logfile="$LOG_DIR/$name.log" k
  [[ -x "$bin" ]] || die "$bin is missing: build first (make build)"
  mkdir -p "$LOG_DIR" "$RUN_DIR" "$DATA_DIR/$folder"
  database_for "$folder"

  if [[ "$setup" != - ]] && ! live_pid "$RUN_DIR/$name.pid" "$name" >/dev/null; then
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
  for ((k = 1; k <= REPLICAS; k++)); do
    start_replica "$name" "$(replica_port "$port" "$k")" "$folder" "$k"
  done
}

# Starts replica $4 of service $1 on port $2 (idempotent) and waits until it is ready.
start_replica() {
  local name=$1 port=$2 folder=$3 k=$4 stem pid
  stem="$(replica_stem "$name" "$k")"
  local bin="$BIN_DIR/$name" pidfile="$RUN_DIR/$stem.pid" logfile="$LOG_DIR/$stem.log"
  if pid="$(live_pid "$pidfile" "$name")"; then
    log "$stem already running (pid $pid)"
  else
    if port_answers "$port"; then
      die "port $port is taken by another process; cannot start $stem (stop it or set its port)"
    fi
    log "starting $stem on 127.0.0.1:$port (${GROCER_DATABASE_URL:-SQLite}, log $logfile)"
    echo "--- $(date -u +%FT%TZ) start" >>"$logfile"
    # A plain command (not a function) so that $! is the service's own pid.
    GROCER_HTTP_PORT="$port" GROCER_DATA_DIR="$DATA_DIR/$folder" GROCER_REPLICA_ID="$stem" \
      GROCER_HTTP_THREADS="$HTTP_THREADS" nohup "$bin" >>"$logfile" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$pidfile"
  fi

  if ! wait_http_ok "http://127.0.0.1:$port/health/ready" "$READY_TIMEOUT" "$pid"; then
    log "last lines of $logfile:"
    tail -n 30 "$logfile" >&2
    if alive "$pid"; then terminate "$pid" 15; fi
    rm -f "$pidfile"
    die "$stem did not become ready"
  fi
  log "$stem ready: http://127.0.0.1:$port"
}

# Stops every replica of service $1 that runs, whatever REPLICAS is now (the last one first).
stop_one() {
  local name=$1 k stem pidfile pid
  for ((k = 9; k >= 1; k--)); do
    stem="$(replica_stem "$name" "$k")"
    pidfile="$RUN_DIR/$stem.pid"
    if pid="$(live_pid "$pidfile" "$name")"; then
      log "stopping $stem (pid $pid)"
      terminate "$pid" 15
    elif ((k == 1)); then
      log "$name not running"
    fi
    rm -f "$pidfile"
  done
}

status_one() {
  local name=$1 port=$2 k stem pid rc=0 replica_port_k
  for ((k = 1; k <= REPLICAS; k++)); do
    stem="$(replica_stem "$name" "$k")"
    replica_port_k="$(replica_port "$port" "$k")"
    if pid="$(live_pid "$RUN_DIR/$stem.pid" "$name")"; then
      if [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
        "http://127.0.0.1:$replica_port_k/health/ready" 2>/dev/null)" == 200 ]]; then
        echo "$stem: ready (pid $pid, http://127.0.0.1:$replica_port_k)"
      else
        echo "$stem: running but not ready (pid $pid, http://127.0.0.1:$replica_port_k)"
        rc=1
      fi
    else
      echo "$stem: stopped"
      rc=1
    fi
  done
  return "$rc"
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
