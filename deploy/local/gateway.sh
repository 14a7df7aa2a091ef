#!/usr/bin/env bash
# The local gateway: nginx on 127.0.0.1:8080 (GROCER_GATEWAY_PORT) in front of the services.
#
#   deploy/local/gateway.sh start    render the config, check it, start nginx (idempotent)
#   deploy/local/gateway.sh stop     graceful stop (QUIT), then TERM/KILL if it lingers
#   deploy/local/gateway.sh status   exit 0 if it runs and answers
#   deploy/local/gateway.sh check    render and `nginx -t` only
#
# nginx runs with its own prefix var/nginx/ (conf/, logs/, run/, tmp/): no system nginx config.
set -euo pipefail
LOG_PREFIX=gateway.sh
# shellcheck source=deploy/local/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PREFIX="$VAR_DIR/nginx"
# Requests per second (sustained, and the burst allowed on top) per bearer token, and per client
# address for requests without one.
RATE_LIMIT="${GROCER_GATEWAY_RATE_LIMIT:-50}"
RATE_BURST="${GROCER_GATEWAY_RATE_BURST:-100}"
ANONYMOUS_RATE_LIMIT="${GROCER_GATEWAY_ANONYMOUS_RATE_LIMIT:-200}"
ANONYMOUS_RATE_BURST="${GROCER_GATEWAY_ANONYMOUS_RATE_BURST:-400}"
for value in "$RATE_LIMIT" "$RATE_BURST" "$ANONYMOUS_RATE_LIMIT" "$ANONYMOUS_RATE_BURST"; do
  [[ "$value" =~ ^[1-9][0-9]*$ ]] || die "GROCER_GATEWAY_*RATE_* must be positive integers (got '$value')"
done
CONF="$PREFIX/conf/gateway.conf"
PIDFILE="$PREFIX/run/nginx.pid"
NGINX=(nginx -p "$PREFIX/" -c "$CONF" -e logs/error.log)

# The upstream servers of a service whose first replica listens on $1: one per replica. A lone
# server is never marked down (max_fails=0: it would 503 for fail_timeout after a restart).
servers() {
  local k line=""
  if ((REPLICAS == 1)); then echo "server 127.0.0.1:$1 max_fails=0;"; return; fi
  for ((k = 1; k <= REPLICAS; k++)); do
    line+="server 127.0.0.1:$(replica_port "$1" "$k") max_fails=1 fail_timeout=5s; "
  done
  echo "$line"
}

render() {
  command -v nginx >/dev/null || die "nginx is not installed (make deps)"
  mkdir -p "$PREFIX/conf" "$PREFIX/logs" "$PREFIX/run" "$PREFIX/tmp"
  # The demo catalogue's images, drawn once, served as /images/.
  if [[ ! -e "$VAR_DIR/images/.drawn" && -x "$BIN_DIR/stock-service" ]]; then
    "$BIN_DIR/stock-service" demo-images "$VAR_DIR/images" >/dev/null && touch "$VAR_DIR/images/.drawn"
  fi
  local next_upstream=off
  ((REPLICAS == 1)) || next_upstream="error timeout"
  sed -e "s/@GATEWAY_PORT@/$GATEWAY_PORT/g" -e "s/@STOCK_SERVERS@/$(servers "$STOCK_PORT")/g" \
    -e "s/@CART_SERVERS@/$(servers "$CART_PORT")/g" -e "s/@ORDER_SERVERS@/$(servers "$ORDER_PORT")/g" \
    -e "s/@TRACKING_SERVERS@/$(servers "$TRACKING_PORT")/g" -e "s/@NOTIFY_SERVERS@/$(servers "$NOTIFY_PORT")/g" \
    -e "s/@NEXT_UPSTREAM@/$next_upstream/g" -e "s|@IMAGES_ROOT@|$(cd "$VAR_DIR" && pwd)|g" \
    -e "s/@RATE_LIMIT@/$RATE_LIMIT/g" -e "s/@RATE_BURST@/$RATE_BURST/g" \
    -e "s/@ANONYMOUS_RATE_LIMIT@/$ANONYMOUS_RATE_LIMIT/g" -e "s/@ANONYMOUS_RATE_BURST@/$ANONYMOUS_RATE_BURST/g" \
    "$GROCER_ROOT/deploy/local/nginx-gateway.conf" >"$CONF.new"
  mv "$CONF.new" "$CONF"
  "${NGINX[@]}" -t -q || die "invalid gateway config $CONF"
}

start() {
  render
  local pid
  if pid="$(live_pid "$PIDFILE" nginx)"; then
    log "nginx already running (pid $pid); reloading its config"
    "${NGINX[@]}" -s reload
  else
    port_answers "$GATEWAY_PORT" && die "port $GATEWAY_PORT is taken by another process"
    "${NGINX[@]}"
  fi
  wait_http_ok "http://127.0.0.1:$GATEWAY_PORT/gateway/health" 10 ||
    { tail -n 20 "$PREFIX/logs/error.log" >&2; die "gateway did not start"; }
  log "gateway ready: http://127.0.0.1:$GATEWAY_PORT"
}

stop() {
  local pid
  if pid="$(live_pid "$PIDFILE" nginx)"; then
    log "stopping nginx (pid $pid)"
    kill -QUIT "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 10))
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
    if alive "$pid"; then terminate "$pid" 5; fi
  else
    log "nginx not running"
  fi
  rm -f "$PIDFILE"
}

status() {
  local pid
  if pid="$(live_pid "$PIDFILE" nginx)" &&
    [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
      "http://127.0.0.1:$GATEWAY_PORT/gateway/health")" == 200 ]]; then
    echo "gateway: ready (pid $pid, http://127.0.0.1:$GATEWAY_PORT)"
  else
    echo "gateway: stopped"
    return 1
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  check) render && log "config OK: $CONF" ;;
  *) echo "usage: $0 start|stop|status|check" >&2; exit 2 ;;
esac
