# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables are used by the scripts that source this file
# Shared helpers for the local scripts (sourced, never run). Everything the local system writes
# lives under $GROCER_VAR_DIR (default <project>/var): data/, log/, run/, nginx/, rabbitmq/.

GROCER_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VAR_DIR="${GROCER_VAR_DIR:-$GROCER_ROOT/var}"
# `make run` builds release; the scripts run what that build produced.
BIN_DIR="${GROCER_BIN_DIR:-$GROCER_ROOT/.build/release}"
LOG_DIR="$VAR_DIR/log"
RUN_DIR="$VAR_DIR/run"
DATA_DIR="$VAR_DIR/data"
# The broker script: started (or reused) by the benchmarks, asked for their vhosts.
RABBITMQ_SCRIPT="${GROCER_RABBITMQ_SCRIPT:-$GROCER_ROOT/deploy/local/rabbitmq.sh}"

# Ports (SPEC.md "Running it"); each can be moved by its variable.
GATEWAY_PORT="${GROCER_GATEWAY_PORT:-8080}"
STOCK_PORT="${GROCER_STOCK_PORT:-8081}"
CART_PORT="${GROCER_CART_PORT:-8082}"
ORDER_PORT="${GROCER_ORDER_PORT:-8083}"
TRACKING_PORT="${GROCER_TRACKING_PORT:-8084}"
NOTIFY_PORT="${GROCER_NOTIFY_PORT:-8085}"
AMQP_PORT="${GROCER_AMQP_PORT:-5672}"

# What every service gets (the services read these; see README.md). GROCER_BROKER=cluster
# (`make run BROKER=cluster`): the local three-node cluster's nodes, as GROCER_AMQP_URLS.
export GROCER_AMQP_URL="${GROCER_AMQP_URL:-amqp://guest:guest@127.0.0.1:$AMQP_PORT/}"
if [[ "${GROCER_BROKER:-single}" == cluster && -z "${GROCER_AMQP_URLS:-}" ]]; then
  GROCER_AMQP_URLS="$(bash "$(dirname "${BASH_SOURCE[0]}")/rabbitmq.sh" cluster urls)"
  export GROCER_AMQP_URLS
fi
export GROCER_JWT_SECRET="${GROCER_JWT_SECRET:-grocer-local-development-secret-change-me}"
export GROCER_HTTP_HOST="${GROCER_HTTP_HOST:-127.0.0.1}"
export GROCER_LOG_LEVEL="${GROCER_LOG_LEVEL:-info}"

# The services `make run` starts, in start order. One line per service:
#   name (= executable in $BIN_DIR)  port  data folder under $DATA_DIR  set-up subcommand or -
# The set-up subcommand runs once before the first start (idempotent; a marker records it).
SERVICES=(
  "stock-service $STOCK_PORT stock load-demo"
  "cart-service $CART_PORT cart load-demo"
  "order-service $ORDER_PORT order -"
  "tracking-service $TRACKING_PORT tracking -"
  "notify-gateway $NOTIFY_PORT notify -"
)

log() { echo "${LOG_PREFIX:-grocer}: $*" >&2; }
die() { log "$*"; exit 1; }

# Processes per service (`make run DB=postgres REPLICAS=2`): replica k listens on the service's
# port + 100 × (k − 1) (8081, 8181, …) and is GROCER_REPLICA_ID=<name>-<k>; the gateway spreads
# requests over them. More than one needs DB=postgres: SQLite keeps a service on one host.
REPLICAS="${GROCER_REPLICAS:-1}"
[[ "$REPLICAS" =~ ^[1-9]$ ]] || die "GROCER_REPLICAS must be 1 to 9 (got '$REPLICAS')"
if ((REPLICAS > 1)) && [[ "${GROCER_DB:-sqlite}" != postgres ]]; then
  die "REPLICAS=$REPLICAS needs DB=postgres (every replica of a service shares its database)"
fi

# The port of replica $2 (1-based) of a service whose first replica listens on $1.
replica_port() { echo $(($1 + 100 * ($2 - 1))); }

# True if something accepts TCP connections on 127.0.0.1:$1.
port_answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# True if process $1 exists and is not a zombie (a child that exited but was not reaped yet).
alive() {
  local state
  state="$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null)" || return 1
  state="${state%% *}"
  [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

# Prints the pid stored in file $1 if that process is alive and its command line mentions $2.
live_pid() {
  local file=$1 name=$2 pid
  [[ -s "$file" ]] || return 1
  pid="$(tr -dc '0-9' <"$file")"
  [[ -n "$pid" ]] && alive "$pid" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$name" || return 1
  echo "$pid"
}

# Waits until URL $1 answers 200, for at most $2 seconds, while pid $3 (optional) lives.
wait_http_ok() {
  local url=$1 timeout=$2 pid=${3:-} deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    if [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" 2>/dev/null)" == 200 ]]; then
      return 0
    fi
    if [[ -n "$pid" ]] && ! alive "$pid"; then
      log "process $pid exited while waiting for $url"
      return 1
    fi
    sleep 0.2
  done
  log "$url did not answer 200 within ${timeout}s"
  return 1
}

# Sends SIGTERM to pid $1, waits up to $2 seconds (default 15), then SIGKILL.
terminate() {
  local pid=$1 grace=${2:-15} deadline
  kill -TERM "$pid" 2>/dev/null || return 0
  deadline=$((SECONDS + grace))
  while alive "$pid"; do
    if ((SECONDS >= deadline)); then
      log "pid $pid still running after ${grace}s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
      return 0
    fi
    sleep 0.1
  done
}

# The machine's busy and steal clock ticks so far, over all CPUs (/proc/stat). Steal is time its
# virtual CPUs were ready while the host ran other guests: benchmarks report it beside their numbers.
machine_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $9 }' /proc/stat; }
# TICKS over MILLISECONDS of wall time as a whole share of every core ("37%"; "-" without time).
core_share() { # ticks milliseconds
  awk -v t="$1" -v ms="$2" -v hz="$(getconf CLK_TCK)" -v cores="$(nproc)" \
    'BEGIN { if (ms > 0) printf "%d%%", int(100 * t / (ms / 1000 * hz * cores) + 0.5); else printf "-" }'
}

# A benchmark's own virtual host on the local broker: what a run publishes (thousands of
# stock.changed, order.confirmed, …) must not reach the durable queues of a `make run` system on
# the same broker, which keep every event until their service comes back (left over, they held
# 1.6 million messages, and a broker restart replayed them all), nor theirs ours. Makes
# "<prefix>-<pid>" with the guest user's rights and the dead-letter policy, points
# GROCER_AMQP_URL at it and sets BENCH_VHOST; on failure says so and leaves both as they were.
# Call bench_vhost_drop from the script's EXIT trap: the vhost goes with everything in it.
BENCH_VHOST=""
bench_vhost_make() { # prefix
  local vhost="$1-$$"
  if bash "$RABBITMQ_SCRIPT" ctl add_vhost "$vhost" >/dev/null &&
    bash "$RABBITMQ_SCRIPT" ctl set_permissions -p "$vhost" guest '.*' '.*' '.*' >/dev/null &&
    bash "$RABBITMQ_SCRIPT" policy "$vhost"; then
    BENCH_VHOST="$vhost"
    export GROCER_AMQP_URL="${GROCER_AMQP_URL%/}/$vhost"
    # A cluster's nodes (GROCER_BROKER=cluster) each with the vhost too.
    if [[ -n "${GROCER_AMQP_URLS:-}" ]]; then
      GROCER_AMQP_URLS="$(tr ',' '\n' <<<"$GROCER_AMQP_URLS" | sed "s|/*\$|/$vhost|" | paste -sd, -)"
      export GROCER_AMQP_URLS
    fi
  else
    log "could not make the virtual host $vhost; using the broker's default one"
  fi
}
bench_vhost_drop() {
  [[ -n "$BENCH_VHOST" ]] || return 0
  bash "$RABBITMQ_SCRIPT" ctl delete_vhost "$BENCH_VHOST" >/dev/null 2>&1 || true
  BENCH_VHOST=""
}

# A benchmark's yardstick: nginx under DIR (config, logs, temp files) on 127.0.0.1:PORT with 2
# workers and no access log, its server block holding SERVER (the directives that answer: a root,
# a `location`, …). Sets NGINX_PID once it runs; bench_nginx_stop (from the EXIT trap) ends it.
NGINX_PID=""
bench_nginx_start() { # dir port server-directives
  local dir="$1" port="$2" server="$3"
  mkdir -p "$dir/logs" "$dir/tmp"
  cat >"$dir/nginx.conf" <<CONF
worker_processes 2;
pid nginx.pid;
error_log logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  default_type application/json;
  client_body_temp_path tmp/client_body;
  proxy_temp_path tmp/proxy;
  fastcgi_temp_path tmp/fastcgi;
  uwsgi_temp_path tmp/uwsgi;
  scgi_temp_path tmp/scgi;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$port reuseport backlog=4096;
    $server
  }
}
CONF
  nginx -p "$dir/" -c "$dir/nginx.conf" -e logs/error.log || die "nginx did not start (see $dir/logs)"
  for _ in $(seq 1 50); do [[ -s "$dir/nginx.pid" ]] && break; sleep 0.1; done
  NGINX_PID="$(cat "$dir/nginx.pid")"
}
bench_nginx_stop() {
  [[ -n "$NGINX_PID" ]] && alive "$NGINX_PID" || return 0
  kill -QUIT "$NGINX_PID" 2>/dev/null || true
  for _ in $(seq 1 50); do alive "$NGINX_PID" || break; sleep 0.1; done
  if alive "$NGINX_PID"; then terminate "$NGINX_PID" 5; fi
}
