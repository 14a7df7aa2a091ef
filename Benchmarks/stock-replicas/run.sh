#!/usr/bin/env bash
# Stock lookups through a front with one StockService replica against the same front with two,
# side by side in one run: both replicas on one fresh PostgreSQL database, nginx in front
# (round-robin, keep-alive upstreams, no rate limit: the gateway's per-user limit would measure
# itself), the stock-lookup benchmark's 200 paths of 20 ids. On 2 cores two replicas share the
# same cores, so the ratio two/one says what running replicas costs, not what it gains.
# Builds nothing: `make bench` builds the release binaries first.
#
# Environment (all optional):
#   BENCH_CONNECTIONS "64 256"  BENCH_DURATION 10s per setup and connection count (over rounds)
#   BENCH_ROUNDS 2  BENCH_THREADS 2  BENCH_STOCK_PORT 18281 (replica 2: +100)
#   BENCH_FRONT_PORT 18290 (one replica; 18291: two)  BENCH_HUB h1
#   GROCER_BIN_DIR, GROCER_RABBITMQ_SCRIPT as for the other benchmarks
set -euo pipefail
LOG_PREFIX=stock-replicas
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/local/lib.sh
source "$HERE/../../deploy/local/lib.sh"
LOOKUP="$HERE/../stock-lookup"
POSTGRES_SCRIPT="$HERE/../../deploy/local/postgres.sh"

CONNECTIONS="${BENCH_CONNECTIONS:-64 256}"
DURATION="${BENCH_DURATION:-10s}"
ROUNDS="${BENCH_ROUNDS:-2}"
THREADS="${BENCH_THREADS:-2}"
STOCK_PORT="${BENCH_STOCK_PORT:-18281}"
FRONT_PORT="${BENCH_FRONT_PORT:-18290}"
HUB="${BENCH_HUB:-h1}"
PORTS=("$STOCK_PORT" "$((STOCK_PORT + 100))")
FRONTS=([1]="$FRONT_PORT" [2]="$((FRONT_PORT + 1))")

for tool in wrk nginx curl psql python3; do command -v "$tool" >/dev/null || die "$tool is not installed"; done
[[ -x "$BIN_DIR/stock-service" ]] || die "$BIN_DIR/stock-service is missing (make bench builds it)"
for port in "${PORTS[@]}" "${FRONTS[@]}"; do port_answers "$port" && die "port $port is taken"; done

WORK="$(mktemp -d /tmp/grocer-bench-stock-replicas.XXXXXX)"
DATABASE="sr$(date +%s)_stock"
PIDS=()
NGINX_PID=""
cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do if alive "$pid"; then terminate "$pid" 15; fi; done
  if [[ -n "$NGINX_PID" ]] && alive "$NGINX_PID"; then terminate "$NGINX_PID" 5; fi
  bench_vhost_drop
  bash "$POSTGRES_SCRIPT" dropdb "$DATABASE" >/dev/null 2>&1 || true
  if ((rc == 0)); then rm -rf "$WORK"; else log "kept $WORK for inspection"; fi
}
trap cleanup EXIT

bash "$RABBITMQ_SCRIPT" start
bench_vhost_make stock-replicas
bash "$POSTGRES_SCRIPT" start
bash "$POSTGRES_SCRIPT" createdb "$DATABASE" >/dev/null
stock_env=(GROCER_SERVICE_NAME=stock-replicas GROCER_RESERVATION_QUEUE=stock-replicas.reservations
  GROCER_CATALOGUE_QUEUE=stock-replicas.catalogue GROCER_QUEUE_EXPIRES=600 GROCER_LOG_LEVEL=warning
  GROCER_DATA_DIR="$WORK/data" "GROCER_DATABASE_URL=$(bash "$POSTGRES_SCRIPT" url "$DATABASE")")
mkdir -p "$WORK/data"
env "${stock_env[@]}" "$BIN_DIR/stock-service" load-demo >>"$WORK/stock.log" 2>&1 </dev/null ||
  { tail -n 20 "$WORK/stock.log" >&2; die "load-demo failed"; }
for k in 0 1; do
  env "${stock_env[@]}" GROCER_HTTP_PORT="${PORTS[k]}" GROCER_REPLICA_ID="stock-replicas-$((k + 1))" \
    "$BIN_DIR/stock-service" >>"$WORK/stock.log" 2>&1 </dev/null &
  PIDS+=($!)
  wait_http_ok "http://127.0.0.1:${PORTS[k]}/health/ready" 60 "${PIDS[k]}" ||
    { tail -n 20 "$WORK/stock.log" >&2; die "stock-service replica $((k + 1)) did not become ready"; }
done

mkdir -p "$WORK/nginx/logs"
cat >"$WORK/nginx/nginx.conf" <<CONF
worker_processes 2;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  upstream one { server 127.0.0.1:${PORTS[0]}; keepalive 256; }
  upstream two { server 127.0.0.1:${PORTS[0]}; server 127.0.0.1:${PORTS[1]}; keepalive 256; }
  server { listen 127.0.0.1:${FRONTS[1]}; location / { proxy_pass http://one; proxy_http_version 1.1; proxy_set_header Connection ""; } }
  server { listen 127.0.0.1:${FRONTS[2]}; location / { proxy_pass http://two; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
CONF
nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -g 'daemon off;' >>"$WORK/nginx.log" 2>&1 </dev/null &
NGINX_PID=$!
wait_http_ok "http://127.0.0.1:${FRONTS[2]}/health/ready" 20 "$NGINX_PID" || die "nginx did not start"

# The stock-lookup benchmark's paths, each warmed on both replicas.
awk -v hub="$HUB" 'BEGIN {
  for (i = 0; i < 200; i++) {
    line = "/v1/hubs/" hub "/stock?ids="
    for (j = 0; j < 20; j++) line = line (j ? "," : "") sprintf("p%05d", (i * 37 + j * 151) % 3000 + 1)
    print line
  }
}' >"$WORK/paths.txt"
TOKEN="$("$BIN_DIR/grocer-token" bench-user 2>/dev/null | tail -n 1)"
for port in "${PORTS[@]}"; do
  urls=()
  while IFS= read -r path; do urls+=(-o /dev/null "http://127.0.0.1:$port$path"); done <"$WORK/paths.txt"
  bad="$(curl -sg -H "Authorization: Bearer $TOKEN" -w '%{http_code}\n' "${urls[@]}" | grep -cvx 200 || true)"
  ((bad == 0)) || die "$bad warm-up lookups on port $port did not answer 200"
done

cpu_ticks() { local total=0 pid; for pid in "$@"; do
  total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0))); done; echo "$total"; }
steal_ticks() { machine_ticks | cut -d ' ' -f 2; }
target_pids() { # replicas: the processes that serve the setup (its replicas and nginx's workers)
  echo "${PIDS[@]:0:$1} $(pgrep -P "$NGINX_PID" | tr '\n' ' ')"
}
run_round() { # replicas connections
  local out pids before after line steal_before
  pids="$(target_pids "$1")"
  # shellcheck disable=SC2086
  before="$(cpu_ticks $pids)"
  steal_before="$(steal_ticks)"
  out="$(wrk -t"$THREADS" -c"$2" -d"${ROUND_SECONDS}s" --timeout 5s -s "$LOOKUP/ids.lua" \
    "http://127.0.0.1:${FRONTS[$1]}" -- "$WORK/paths.txt" "$TOKEN" 2>&1)" || { echo "$out" >&2; die "wrk failed"; }
  line="$(grep '^RESULT ' <<<"$out" | tail -n 1)"
  [[ -n "$line" ]] || { echo "$out" >&2; die "no RESULT from wrk"; }
  # shellcheck disable=SC2086
  after="$(cpu_ticks $pids)"
  { echo "$line cpu_ticks=$((after - before)) steal_ticks=$(($(steal_ticks) - steal_before))"; grep '^QUANTILES ' <<<"$out" | tail -n 1; } >>"$WORK/rounds.$1.$2"
}
declare -A RESULT
finish() { # replicas connections
  local line requests ticks
  line="$(python3 "$LOOKUP/merge_rounds.py" <"$WORK/rounds.$1.$2")" || die "merging rounds failed"
  requests="$(sed -n 's/.* requests=\([0-9]*\).*/\1/p' <<<"$line")"
  ticks="$(sed -n 's/.* cpu_ticks=\([0-9]*\).*/\1/p' <<<"$line")"
  line="$line cpu_ns_per_request=$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v n="$requests" 'BEGIN { printf "%d", (n > 0 ? t * 1e9 / hz / n : 0) }')"
  RESULT[$1:$2]="$line"
  printf 'replicas=%s c=%-4s %s\n' "$1" "$2" "${line#RESULT }"
}
field() { sed -n "s/.*[ ]$2=\([0-9]*\).*/\1/p" <<<" ${RESULT[$1]:-}"; }

TOTAL_SECONDS="${DURATION%s}"
ROUND_SECONDS=$(((TOTAL_SECONDS + ROUNDS - 1) / ROUNDS))
echo "stock-replicas: $(nproc) cores, PostgreSQL, nginx in front, $ROUNDS rounds of ${ROUND_SECONDS}s per setup taking turns"
for c in $CONNECTIONS; do
  for round in $(seq 1 "$ROUNDS"); do
    if ((round % 2 == 1)); then order="1 2"; else order="2 1"; fi
    for replicas in $order; do run_round "$replicas" "$c"; done
  done
  finish 1 "$c"
  finish 2 "$c"
done

ms() { awk -v us="$1" 'BEGIN { printf "%.2f", us / 1000 }'; }
echo
echo "Summary (through nginx; CPU per request counts the replicas and nginx's workers):"
printf '%-6s %12s %8s %9s %12s %8s %9s %8s\n' conns "1: req/s" "p99 ms" "CPU µs" "2: req/s" "p99 ms" "CPU µs" "2 / 1"
for c in $CONNECTIONS; do
  one="$(field "1:$c" rps)" two="$(field "2:$c" rps)"
  printf '%-6s %12s %8s %9s %12s %8s %9s %8s\n' "$c" "$one" "$(ms "$(field "1:$c" p99_us)")" \
    "$(awk -v n="$(field "1:$c" cpu_ns_per_request)" 'BEGIN { printf "%.1f", n / 1000 }')" "$two" \
    "$(ms "$(field "2:$c" p99_us)")" "$(awk -v n="$(field "2:$c" cpu_ns_per_request)" 'BEGIN { printf "%.1f", n / 1000 }')" \
    "$(awk -v a="$two" -v b="$one" 'BEGIN { printf (b > 0 ? sprintf("%.2f", a / b) : "-") }')"
done
bad=0
for key in "${!RESULT[@]}"; do bad=$((bad + $(field "$key" non2xx) + $(field "$key" socket_errors))); done
echo "non-2xx answers and socket errors over every round: $bad"
