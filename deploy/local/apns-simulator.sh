#!/usr/bin/env bash
# The APNs simulator as its own server, speaking HTTP/2 over TLS like APNs, so NotifyGateway's
# real transport (GROCER_APNS_TRANSPORT=http2) can be pointed at it.
#
#   deploy/local/apns-simulator.sh start    make the certificate and key (once), start the
#                                           simulator and its nginx front (idempotent)
#   deploy/local/apns-simulator.sh stop     stop both
#   deploy/local/apns-simulator.sh status   exit 0 if the front answers
#   deploy/local/apns-simulator.sh env      print the settings that point NotifyGateway at it
#
# `notify-gateway apns-simulator` serves APNs's provider API with libmicrohttpd, which speaks
# HTTP/1.1 only; nginx terminates TLS and HTTP/2 (h2 by ALPN) in front of it on
# GROCER_APNS_SIM_TLS_PORT (8443), as APNs's own front does. Debian's libcurl cannot multiplex h2c,
# so the front is TLS with a self-signed certificate (var/apns/tls/cert.pem: the client's CA file).
#
# Everything lives under var/apns/: tls/ (certificate), AuthKey.p8 and AuthKey.pub.pem (a provider
# key made for the simulator unless GROCER_APNS_KEY_FILE and GROCER_APNS_SIM_PUBLIC_KEY name
# yours), nginx/ (config, logs, pid). The simulator logs to var/log/apns-simulator.log.
set -euo pipefail
LOG_PREFIX=apns-simulator.sh
# shellcheck source=deploy/local/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SIM_PORT="${GROCER_APNS_SIM_PORT:-8086}"
TLS_PORT="${GROCER_APNS_SIM_TLS_PORT:-8443}"
APNS_DIR="$VAR_DIR/apns"
TLS_DIR="$APNS_DIR/tls"
PREFIX="$APNS_DIR/nginx"
CONF="$PREFIX/conf/apns-front.conf"
NGINX_PIDFILE="$PREFIX/run/nginx.pid"
SIM_PIDFILE="$RUN_DIR/apns-simulator.pid"
SIM_LOG="$LOG_DIR/apns-simulator.log"
NGINX=(nginx -p "$PREFIX/" -c "$CONF" -e logs/error.log)

KEY_ID="${GROCER_APNS_KEY_ID:-SIMKEY0001}"
TEAM_ID="${GROCER_APNS_TEAM_ID:-SIMTEAM001}"
KEY_FILE="${GROCER_APNS_KEY_FILE:-$APNS_DIR/AuthKey.p8}"
PUBLIC_KEY="${GROCER_APNS_SIM_PUBLIC_KEY:-$APNS_DIR/AuthKey.pub.pem}"

material() {
  command -v openssl >/dev/null || die "openssl is not installed (make deps)"
  mkdir -p "$TLS_DIR" "$LOG_DIR" "$RUN_DIR"
  if [[ ! -s "$TLS_DIR/cert.pem" || ! -s "$TLS_DIR/key.pem" ]]; then
    log "making a self-signed certificate for localhost and 127.0.0.1 in $TLS_DIR"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$TLS_DIR/key.pem" -out "$TLS_DIR/cert.pem" -days 825 -subj /CN=localhost \
      -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
  fi
  # The simulator needs only the public key; a private key is made only when neither exists.
  if [[ ! -s "$PUBLIC_KEY" ]]; then
    if [[ ! -s "$KEY_FILE" ]]; then
      log "making a provider key (ES256, like Apple's .p8) at $KEY_FILE"
      mkdir -p "$(dirname "$KEY_FILE")"
      (umask 077 && openssl ecparam -name prime256v1 -genkey -noout |
        openssl pkcs8 -topk8 -nocrypt -out "$KEY_FILE")
    fi
    openssl pkey -in "$KEY_FILE" -pubout -out "$PUBLIC_KEY"
  fi
}

render() {
  command -v nginx >/dev/null || die "nginx is not installed (make deps)"
  mkdir -p "$PREFIX/conf" "$PREFIX/logs" "$PREFIX/run" "$PREFIX/tmp"
  cat >"$CONF.new" <<EOF
pid run/nginx.pid;
worker_processes 1;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path tmp/body;
  proxy_temp_path tmp/proxy;
  fastcgi_temp_path tmp/fastcgi;
  uwsgi_temp_path tmp/uwsgi;
  scgi_temp_path tmp/scgi;
  client_max_body_size 1m;
  upstream simulator {
    server 127.0.0.1:$SIM_PORT;
    keepalive 64;
  }
  server {
    listen 127.0.0.1:$TLS_PORT ssl http2;
    ssl_certificate $TLS_DIR/cert.pem;
    ssl_certificate_key $TLS_DIR/key.pem;
    # APNs allows up to 1,000 concurrent streams per connection.
    http2_max_concurrent_streams 1000;
    keepalive_requests 1000000;
    location / {
      proxy_pass http://simulator;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
EOF
  mv "$CONF.new" "$CONF"
  "${NGINX[@]}" -t -q || die "invalid front config $CONF"
}

front_answers() {
  [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --http2 --cacert "$TLS_DIR/cert.pem" \
    "https://localhost:$TLS_PORT/health/live" 2>/dev/null)" == 200 ]]
}

start() {
  local bin="$BIN_DIR/notify-gateway" pid
  [[ -x "$bin" ]] || die "$bin is missing (make build, or set GROCER_BIN_DIR)"
  material
  if pid="$(live_pid "$SIM_PIDFILE" notify-gateway)"; then
    log "simulator already running (pid $pid)"
  else
    port_answers "$SIM_PORT" && die "port $SIM_PORT is taken by another process"
    # Its record (what each token received) is kept in its own data folder, apart from the
    # gateway's.
    GROCER_HTTP_PORT="$SIM_PORT" GROCER_APNS_SIM_PUBLIC_KEY="$PUBLIC_KEY" GROCER_APNS_KEY_ID="$KEY_ID" \
      GROCER_APNS_TEAM_ID="$TEAM_ID" GROCER_DATA_DIR="$VAR_DIR/apns/data" \
      nohup "$bin" apns-simulator >>"$SIM_LOG" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$SIM_PIDFILE"
    wait_http_ok "http://127.0.0.1:$SIM_PORT/health/live" 20 "$pid" ||
      { tail -n 20 "$SIM_LOG" >&2; die "the simulator did not start"; }
  fi
  render
  if pid="$(live_pid "$NGINX_PIDFILE" nginx)"; then
    "${NGINX[@]}" -s reload
  else
    port_answers "$TLS_PORT" && die "port $TLS_PORT is taken by another process"
    "${NGINX[@]}"
  fi
  local deadline=$((SECONDS + 10))
  until front_answers; do
    ((SECONDS < deadline)) || { tail -n 20 "$PREFIX/logs/error.log" >&2; die "the TLS front did not start"; }
    sleep 0.2
  done
  log "APNs simulator ready: https://localhost:$TLS_PORT (HTTP/2, CA $TLS_DIR/cert.pem)"
  env_lines >&2
}

stop() {
  local pid
  if pid="$(live_pid "$NGINX_PIDFILE" nginx)"; then
    kill -QUIT "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 10))
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
    if alive "$pid"; then terminate "$pid" 5; fi
  fi
  rm -f "$NGINX_PIDFILE"
  if pid="$(live_pid "$SIM_PIDFILE" notify-gateway)"; then terminate "$pid" 15; fi
  rm -f "$SIM_PIDFILE"
  log "stopped"
}

status() {
  if front_answers; then
    echo "apns-simulator: ready (https://localhost:$TLS_PORT over 127.0.0.1:$SIM_PORT)"
  else
    echo "apns-simulator: stopped"
    return 1
  fi
}

env_lines() {
  cat <<EOF
GROCER_APNS_TRANSPORT=http2
GROCER_APNS_URL=https://localhost:$TLS_PORT
GROCER_APNS_CA_FILE=$TLS_DIR/cert.pem
GROCER_APNS_KEY_FILE=$KEY_FILE
GROCER_APNS_KEY_ID=$KEY_ID
GROCER_APNS_TEAM_ID=$TEAM_ID
EOF
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) env_lines ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
