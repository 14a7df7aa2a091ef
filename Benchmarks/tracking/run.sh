#!/usr/bin/env bash
# Tracking benchmark: TrackingService under the load of many orders on the way — each order's
# customer polls GET /v1/orders/{id}/tracking every 5 s and its rider posts a fix (POST
# /v1/orders/{id}/rider) every 5 s: 5,000 orders make 2,000 requests/s. Every accepted fix is a
# new version and a tracking.updated through the outbox. Measured: p50/p99/max of each endpoint
# at that fixed rate (open-loop schedule, latency from when each request was due), non-2xx,
# tracking.updated events/s published by the relay, CPU per process; then nginx answering the
# same bytes at the same rate (the yardstick), and both at full speed (closed loop).
# Builds nothing: `make bench` builds the release binaries first.
#
# Environment (all optional):
#   BENCH_ORDERS        5000   orders on the way (seeded with `grocer seed-bench tracking`)
#   BENCH_PERIOD        5      seconds between one order's polls, and between its rider's fixes
#                              (offered load: 2 x ORDERS / PERIOD requests/s)
#   BENCH_DURATION      60     seconds of the fixed-rate run (the first BENCH_WARMUP, 3, not counted)
#   BENCH_CONNECTIONS   128    wrk connections (enough that a free one is always there when a
#                              request is due)                 BENCH_THREADS 2
#   BENCH_MAX_DURATION  10     seconds of each full-speed run (0: none)  BENCH_MAX_CONNECTIONS 64
#   BENCH_HUB           h3     BENCH_TRACKING_PORT 18184       BENCH_NGINX_PORT 18194
#   BENCH_MIX           both   or get / post: only the polls, or only the fixes (the offered load
#                              halves: one request per order every BENCH_PERIOD)
#   BENCH_PERF          unset  1: `perf record` the service during the fixed-rate run and print
#                              its hottest symbols (where the time goes)
#   BENCH_YARDSTICK     1      0: skip nginx (quicker runs while looking into the service)
#   BENCH_STREAMS       1      0: skip the streams run: one tracking stream (server-sent events)
#                              open per order while each rider posts a fix every BENCH_PERIOD s for
#                              BENCH_STREAM_SECONDS (30); event-to-client latency, memory per stream
#   BENCH_LOG_LEVEL     the service's GROCER_LOG_LEVEL (default warning)
#   GROCER_BIN_DIR      where tracking-service, grocer-token and grocer are (default .build/release)
#   GROCER_RABBITMQ_SCRIPT  the broker script (default deploy/local/rabbitmq.sh; started or reused)
# Needs wrk, curl, nginx and python3 (standard library only: tracking_bench.py).
set -euo pipefail
LOG_PREFIX=tracking-bench
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/local/lib.sh
source "$HERE/../../deploy/local/lib.sh"

ORDERS="${BENCH_ORDERS:-5000}"
PERIOD="${BENCH_PERIOD:-5}"
DURATION="${BENCH_DURATION:-60}"
WARMUP="${BENCH_WARMUP:-3}"
CONNECTIONS="${BENCH_CONNECTIONS:-128}"
THREADS="${BENCH_THREADS:-2}"
MAX_DURATION="${BENCH_MAX_DURATION:-10}"
MAX_CONNECTIONS="${BENCH_MAX_CONNECTIONS:-64}"
HUB="${BENCH_HUB:-h3}"
PORT="${BENCH_TRACKING_PORT:-18184}"
NGINX_PORT="${BENCH_NGINX_PORT:-18194}"
LEVEL="${BENCH_LOG_LEVEL:-warning}"
MIX="${BENCH_MIX:-both}"
PERF="${BENCH_PERF:-}"
YARDSTICK="${BENCH_YARDSTICK:-1}"
STREAMS="${BENCH_STREAMS:-1}"
STREAM_SECONDS="${BENCH_STREAM_SECONDS:-30}"
HELPER="$HERE/tracking_bench.py"

[[ "$MIX" =~ ^(both|get|post)$ ]] || die "BENCH_MIX must be both, get or post"
[[ -z "$PERF" ]] || command -v perf >/dev/null || die "BENCH_PERF needs perf"
for tool in wrk curl nginx python3; do
  command -v "$tool" >/dev/null || die "$tool is not installed"
done
for bin in tracking-service grocer-token grocer; do
  [[ -x "$BIN_DIR/$bin" ]] || die "$BIN_DIR/$bin is missing (make bench builds it)"
done
for number in "$ORDERS" "$PERIOD" "$DURATION" "$CONNECTIONS" "$THREADS" "$MAX_CONNECTIONS"; do
  [[ "$number" =~ ^[0-9]+$ && "$number" -gt 0 ]] || die "'$number' is not a positive whole number"
done
[[ "$MAX_DURATION" =~ ^[0-9]+$ && "$WARMUP" =~ ^[0-9]+$ ]] || die "BENCH_MAX_DURATION and BENCH_WARMUP are whole seconds"
((WARMUP < DURATION)) || die "BENCH_WARMUP must be shorter than BENCH_DURATION"
for port in "$PORT" "$NGINX_PORT"; do
  port_answers "$port" && die "port $port is taken"
done
RATE="$(awk -v n="$ORDERS" -v p="$PERIOD" -v k="$([[ $MIX == both ]] && echo 2 || echo 1)" 'BEGIN { printf "%g", k * n / p }')"
RUN_ID="tb$(date +%s)"

WORK="$(mktemp -d /tmp/grocer-bench-tracking.XXXXXX)"
chmod 755 "$WORK" # nginx workers (user nobody) may need to look inside
SERVICE_PID=""
stop() { # pid
  [[ -n "$1" ]] || return 0
  if alive "$1"; then terminate "$1" 15; fi
  wait "$1" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  stop "$SERVICE_PID"
  bench_nginx_stop
  bench_vhost_drop
  if ((rc == 0)); then rm -rf "$WORK"; else log "kept $WORK for inspection"; fi
}
trap cleanup EXIT

bash "$RABBITMQ_SCRIPT" start

# --- A virtual host of this run alone: its tracking.updated events (hundreds a second) must not
# reach a `make run` system's queues on the same broker. Deleted at the end with everything in it.
bench_vhost_make tracking-bench
service_env=(GROCER_QUEUE_EXPIRES=600 GROCER_LOG_LEVEL="$LEVEL" GROCER_SERVICE_NAME=tracking-bench
  GROCER_DATA_DIR="$WORK/tracking" GROCER_HTTP_PORT="$PORT")

# --- The orders: seeded straight into the data folder (as order.confirmed would create them).
log "seeding $ORDERS orders at $HUB"
seed_start=$SECONDS
env "${service_env[@]}" "$BIN_DIR/grocer" seed-bench tracking --orders "$ORDERS" --hub "$HUB" \
  --prefix "$RUN_ID" >"$WORK/seeded.tsv" 2>>"$WORK/seed.log" </dev/null ||
  { tail -n 20 "$WORK/seed.log" >&2; die "seed-bench failed"; }
log "$(tail -n 1 "$WORK/seed.log") in $((SECONDS - seed_start))s"

log "starting tracking-service on port $PORT"
env "${service_env[@]}" "$BIN_DIR/tracking-service" >>"$WORK/tracking.log" 2>&1 </dev/null &
SERVICE_PID=$!
wait_http_ok "http://127.0.0.1:$PORT/health/ready" 60 "$SERVICE_PID" ||
  { tail -n 20 "$WORK/tracking.log" >&2; die "tracking-service did not become ready"; }

# --- Tokens: the customer of each order, a rider per order, one staff member of the hub.
first_user="$(head -n 1 "$WORK/seeded.tsv" | cut -f 2)"
python3 "$HELPER" plan "$("$BIN_DIR/grocer-token" "$first_user")" "$("$BIN_DIR/grocer-token" r000001 --role rider)" \
  "$WORK/seeded.tsv" "$WORK/plan.tsv"
STAFF="$("$BIN_DIR/grocer-token" "$RUN_ID-staff" --role staff --hubs "$HUB")"

metric_sum() { # prefix: sum of the service's metric lines whose name starts with prefix
  curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" 2>/dev/null |
    awk -v m="$1" 'index($1, m) == 1 { s += $NF } END { printf "%d", s }'
}
wait_backlog() { # seconds: until the relay has published everything (or the time is up)
  local deadline=$((SECONDS + $1))
  while [[ "$(metric_sum outbox_backlog)" != 0 ]]; do
    ((SECONDS < deadline)) || { log "outbox backlog still $(metric_sum outbox_backlog) after $1s"; return 1; }
    sleep 0.2
  done
}

# --- Every order on the way with its rider (picking, then onTheWay), before anything is timed.
log "moving $ORDERS orders to onTheWay (staff, 2 status changes each)"
python3 "$HELPER" assign "$PORT" "$STAFF" "$WORK/plan.tsv" | sed "s/^/$LOG_PREFIX: /" >&2
wait_backlog 60 || true
alive "$SERVICE_PID" || die "tracking-service died during the set-up"

# One real reply of each endpoint: they must work, and nginx answers bytes of the same size.
IFS=$'\t' read -r probe_order probe_customer _ probe_rider_token _ < <(head -n 1 "$WORK/plan.tsv")
code="$(curl -s -o "$WORK/snapshot.json" -w '%{http_code}' --max-time 5 -H "Authorization: Bearer $probe_customer" \
  "http://127.0.0.1:$PORT/v1/orders/$probe_order/tracking")"
[[ "$code" == 200 ]] || die "GET tracking answered $code: $(head -c 300 "$WORK/snapshot.json")"
grep -q '"status":"onTheWay"' "$WORK/snapshot.json" || die "the order is not on the way: $(head -c 300 "$WORK/snapshot.json")"
code="$(curl -s -o "$WORK/fix.json" -w '%{http_code}' --max-time 5 -H "Authorization: Bearer $probe_rider_token" \
  -H 'Content-Type: application/json' -X POST \
  -d "{\"lat\":52.5,\"lng\":13.4,\"recordedAt\":\"$(date -u -d '-10 seconds' +%Y-%m-%dT%H:%M:%SZ)\"}" \
  "http://127.0.0.1:$PORT/v1/orders/$probe_order/rider")"
[[ "$code" == 200 ]] || die "POST rider answered $code: $(head -c 300 "$WORK/fix.json")"
REPLY_BYTES="$(stat -c %s "$WORK/fix.json")"

# --- The yardstick: nginx answering both requests with a snapshot of the same bytes from memory
# (`return 200`), echoing X-Request-ID as the service does; 2 workers, no access log.
NGINX_DIR="$WORK/nginx"
SNAPSHOT="$(cat "$WORK/fix.json")"
[[ "$SNAPSHOT" != *"'"* ]] || die "the snapshot has a quote nginx's config cannot take"
bench_nginx_start "$NGINX_DIR" "$NGINX_PORT" \
  'add_header X-Request-ID $http_x_request_id always; add_header Cache-Control "private, no-store" always;'" location / { return 200 '$SNAPSHOT'; }"
wait_http_ok "http://127.0.0.1:$NGINX_PORT/" 10 "$NGINX_PID" || die "nginx did not start"

# --- Measuring helpers.
declare -A RESULT
field() { sed -n "s/.*[ ]$2=\([0-9.]*\).*/\1/p" <<<" ${RESULT[$1]:-}"; }
text_field() { sed -n "s/.*[ ]$2=\([^ ]*\).*/\1/p" <<<" ${RESULT[$1]:-}"; }
# CPU time (clock ticks, user + system) of processes, and of the whole machine (busy, total).
proc_ticks() { # pids...
  local total=0 pid ticks
  for pid in "$@"; do
    ticks="$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat" 2>/dev/null || echo 0)"
    total=$((total + ticks))
  done
  echo "$total"
}
machine_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat; }
BROKER_PID="$(pgrep -o -f 'beam.smp.*rabbit' || true)"
nginx_pids() { echo "$NGINX_PID $(pgrep -P "$NGINX_PID" | paste -sd ' ' -)"; }
cpu_snapshot() { # ticks of the service, the broker, nginx; then the machine's busy and total
  # shellcheck disable=SC2046
  echo "$(proc_ticks "$SERVICE_PID") $(if [[ -n "$BROKER_PID" ]]; then proc_ticks "$BROKER_PID"; else echo 0; fi)" \
    "$(proc_ticks $(nginx_pids)) $(machine_ticks)"
}
TICK_MS=$((1000 / $(getconf CLK_TCK)))
# The service's own latency histogram, between two snapshots (bucket bounds).
buckets() { curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" | grep '^http_request_duration_seconds_bucket{' || true; }
server_quantiles() { # before-file after-file method route
  awk -v want="$3 $4" '{ match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5)
      match($0, /method="[^"]*"/); m = substr($0, RSTART + 8, RLENGTH - 9)
      match($0, /route="[^"]*"/); r = substr($0, RSTART + 7, RLENGTH - 8)
      if (m " " r != want) next }
    FILENAME == ARGV[1] { before[le] = $NF; next }
    { n++; bound[n] = le; delta[n] = $NF - before[le] }
    END {
      total = delta[n]
      if (total <= 0) { printf "-"; exit }
      for (i = 1; i <= n; i++) {
        if (!p50 && delta[i] >= 0.5 * total) p50 = bound[i]
        if (!p99 && delta[i] >= 0.99 * total) p99 = bound[i]
      }
      printf "p50 <= %s s, p99 <= %s s (%d requests)", p50, p99, total
    }' "$1" "$2"
}
declare -A CPU
run_wrk() { # name port mode seconds connections: runs tracking.lua, keeps RESULT[name:get|post|all]
  local name=$1 port=$2 mode=$3 seconds=$4 connections=$5 out before after wrk_cpu
  read -ra before < <(cpu_snapshot)
  out="$( { TIMEFORMAT='%U %S'; time TRACKING_BENCH_THREADS="$THREADS" TRACKING_BENCH_MODE="$mode" TRACKING_BENCH_MIX="$MIX" \
    wrk -t"$THREADS" -c"$connections" -d"${seconds}s" --timeout 10s -s "$HERE/tracking.lua" \
    "http://127.0.0.1:$port" -- "$WORK/plan.tsv" "$RATE" "$WARMUP" 2>&1; } 2>"$WORK/wrk-time.txt")" ||
    { echo "$out" >&2; die "wrk failed"; }
  read -ra after < <(cpu_snapshot)
  for kind in get post all; do
    RESULT[$name:$kind]="$(grep "^RESULT kind=$kind " <<<"$out" | tail -n 1)"
    [[ -n "${RESULT[$name:$kind]}" ]] || { echo "$out" >&2; die "no RESULT from wrk"; }
    printf '%-14s %s\n' "$name" "${RESULT[$name:$kind]#RESULT }"
  done
  wrk_cpu="$(awk '{ printf "%d", ($1 + $2) * 1000 }' "$WORK/wrk-time.txt")"
  # CPU ms per second of the run: service broker nginx wrk, machine busy %, everything else
  # (other processes on this shared machine; wrk's time is its whole run, so roughly)
  CPU[$name]="$(awk -v s="$((after[0] - before[0]))" -v b="$((after[1] - before[1]))" -v n="$((after[2] - before[2]))" \
    -v w="$wrk_cpu" -v busy="$((after[3] - before[3]))" -v total="$((after[4] - before[4]))" -v t="$TICK_MS" -v d="$seconds" \
    'BEGIN { printf "%d %d %d %d %d %d", s * t / d, b * t / d, n * t / d, w / d, (total > 0 ? 100 * busy / total + 0.5 : 0),
      (busy * t - s * t - b * t - n * t - w) / d }')"
}

echo "tracking: $(nproc) cores, broker vhost ${BENCH_VHOST:-/}, hub $HUB, $ORDERS orders on the way, a poll and a fix" \
  "per order every ${PERIOD}s = $RATE requests/s for ${DURATION}s (first ${WARMUP}s not counted)," \
  "wrk -t$THREADS -c$CONNECTIONS; reply $REPLY_BYTES bytes"

# --- (1) The fixed rate against TrackingService.
log "fixed rate: $RATE requests/s for ${DURATION}s"
buckets >"$WORK/buckets-before.txt"
published_before="$(metric_sum outbox_published_total)"
PERF_PID=""
if [[ -n "$PERF" ]]; then
  perf record -q -F 499 -g -p "$SERVICE_PID" -o "$WORK/perf.data" -- sleep "$((DURATION - WARMUP))" \
    >"$WORK/perf.log" 2>&1 &
  PERF_PID=$!
fi
run_wrk service "$PORT" rate "$DURATION" "$CONNECTIONS"
published_after="$(metric_sum outbox_published_total)"
backlog_after="$(metric_sum outbox_backlog)"
buckets >"$WORK/buckets-after.txt"
alive "$SERVICE_PID" || die "tracking-service died during the fixed-rate run"
drain_start=$SECONDS
wait_backlog 120 || true
DRAIN_SECONDS=$((SECONDS - drain_start))
published_drained="$(metric_sum outbox_published_total)"
SERVER_GET="$(server_quantiles "$WORK/buckets-before.txt" "$WORK/buckets-after.txt" GET /v1/orders/{id}/tracking)"
SERVER_POST="$(server_quantiles "$WORK/buckets-before.txt" "$WORK/buckets-after.txt" POST /v1/orders/{id}/rider)"
SERVICE_RSS_KB="$(awk '/^VmRSS:/ { print $2 }' "/proc/$SERVICE_PID/status")"
sleep 1

# --- (2) The same schedule against nginx.
if [[ "$YARDSTICK" != 0 ]]; then
  log "fixed rate against nginx"
  run_wrk nginx "$NGINX_PORT" rate "$DURATION" "$CONNECTIONS"
  sleep 1
fi

# --- (3) Full speed (closed loop), the same mix: how far the service is from its ceiling.
if ((MAX_DURATION > 0)); then
  log "full speed: wrk -t$THREADS -c$MAX_CONNECTIONS for ${MAX_DURATION}s, service then nginx"
  max_published_before="$(metric_sum outbox_published_total)"
  run_wrk service-max "$PORT" max "$MAX_DURATION" "$MAX_CONNECTIONS"
  max_published_after="$(metric_sum outbox_published_total)"
  alive "$SERVICE_PID" || die "tracking-service died during the full-speed run"
  wait_backlog 120 || true
  sleep 1
  if [[ "$YARDSTICK" != 0 ]]; then run_wrk nginx-max "$NGINX_PORT" max "$MAX_DURATION" "$MAX_CONNECTIONS"; fi
fi

# --- (4) Streams: every order followed as server-sent events while its rider posts fixes.
STREAM_RESULT=""
if [[ "$STREAMS" != 0 ]]; then
  log "streams: $ORDERS open, a fix per order every ${PERIOD}s for ${STREAM_SECONDS}s"
  wait_backlog 120 || true
  STREAM_RESULT="$(python3 "$HELPER" streams "$PORT" "$WORK/plan.tsv" "$SERVICE_PID" "$STREAM_SECONDS" "$PERIOD" |
    grep '^RESULT ' | tail -n 1)" || true
  alive "$SERVICE_PID" || die "tracking-service died during the streams run"
fi

# --- Summary.
ms() { awk -v us="$1" 'BEGIN { printf (us == "" ? "-" : sprintf("%.2f", us / 1000)) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf (b > 0 ? sprintf("%.2f", a / b) : "-") }'; }
window="$(field service:all window_s)"
accepted_fixes=$(($(field service:post requests) - $(field service:post non2xx) - $(field service:post ignored)))
EVENTS_PER_S="$(awk -v d="$((published_after - published_before))" -v s="$DURATION" 'BEGIN { printf "%.0f", d / s }')"
echo
echo "Summary (target: p99 < 10 ms for both at $RATE requests/s; every answer 2xx)"
printf '%-26s %9s %8s %8s %8s %8s %9s %8s %8s\n' what "requests" "p50 ms" "p90 ms" "p99 ms" "max ms" "non-2xx" \
  "send p50" "send p99"
for name in service nginx; do
  for kind in get post; do
    label="$name $([[ $kind == get ]] && echo 'GET …/tracking' || echo 'POST …/rider')"
    printf '%-26s %9s %8s %8s %8s %8s %9s %8s %8s\n' "$label" "$(field "$name:$kind" requests)" \
      "$(ms "$(field "$name:$kind" p50_us)")" "$(ms "$(field "$name:$kind" p90_us)")" \
      "$(ms "$(field "$name:$kind" p99_us)")" "$(ms "$(field "$name:$kind" max_us)")" \
      "$(field "$name:$kind" non2xx)" "$(ms "$(field "$name:$kind" send_p50_us)")" "$(ms "$(field "$name:$kind" send_p99_us)")"
  done
done
echo "(latency from when each request was due; 'send' from when wrk actually sent it)"
for kind in get post; do
  echo "service/nginx at the fixed rate, $kind: p50 $(ratio "$(field "service:$kind" p50_us)" "$(field "nginx:$kind" p50_us)")x," \
    "p99 $(ratio "$(field "service:$kind" p99_us)" "$(field "nginx:$kind" p99_us)")x"
done
echo "achieved: service $(field service:all rps) requests/s, nginx $(field nginx:all rps) (offered $RATE) over ${window}s;" \
  "sends late (generator or no free connection) p50 $(ms "$(field service:all late_p50_us)") ms," \
  "p99 $(ms "$(field service:all late_p99_us)") ms, max $(ms "$(field service:all late_max_us)") ms" \
  "(nginx run: p99 $(ms "$(field nginx:all late_p99_us)") ms)"
echo "statuses: GET $(text_field service:get statuses), POST $(text_field service:post statuses);" \
  "fixes ignored as not newer: $(field service:post ignored); socket errors $(field service:all socket_errors)," \
  "replies without our X-Request-ID $(field service:all unmatched)"
echo "tracking.updated: $((published_after - published_before)) published during the ${DURATION}s run = $EVENTS_PER_S events/s" \
  "(accepted fixes counted: $accepted_fixes, $(awk -v a="$accepted_fixes" -v w="$window" 'BEGIN { printf (w > 0 ? sprintf("%.0f", a / w) : "-") }')/s);" \
  "backlog at the end $backlog_after, drained in ${DRAIN_SECONDS}s ($((published_drained - published_after)) more)"
echo "as the service's histogram saw it: GET $SERVER_GET; POST $SERVER_POST"
read -r c_service c_broker c_nginx c_wrk c_busy c_other <<<"${CPU[service]}"
read -r n_service n_broker n_nginx n_wrk n_busy n_other <<<"${CPU[nginx]:-- - - - - -}"
echo "CPU ms per second at the fixed rate (1000 = one core): tracking-service $c_service, broker $c_broker, wrk $c_wrk," \
  "other processes $c_other; machine busy $c_busy% of $(nproc) cores. nginx run: nginx $n_nginx, wrk $n_wrk," \
  "other processes $n_other, busy $n_busy%"
echo "CPU per request: tracking-service $(awk -v c="$c_service" -v r="$(field service:all rps)" 'BEGIN { printf (r > 0 ? sprintf("%.3f", c / r) : "-") }') ms," \
  "nginx $(awk -v c="$n_nginx" -v r="$(field nginx:all rps)" 'BEGIN { printf (r > 0 ? sprintf("%.3f", c / r) : "-") }') ms"
if [[ -n "$PERF_PID" ]]; then
  wait "$PERF_PID" || true
  echo "where tracking-service's CPU went at the fixed rate (perf, self time, top symbols):"
  perf report -i "$WORK/perf.data" --no-children --sort dso,symbol --percent-limit 0.7 --stdio 2>/dev/null |
    grep -E '^ +[0-9.]+%' | head -n 40 | cut -c 1-160
  echo "by thread:"
  perf report -i "$WORK/perf.data" --no-children --sort comm --stdio 2>/dev/null | grep -E '^ +[0-9.]+%' | head -n 12
  cp "$WORK/perf.data" "/tmp/grocer-bench-tracking-$MIX.perf.data"
  echo "(the profile: /tmp/grocer-bench-tracking-$MIX.perf.data; perf report -i it --children)"
fi
if ((MAX_DURATION > 0)); then
  echo "full speed (closed loop, -c$MAX_CONNECTIONS, same mix): service $(field service-max:all rps) requests/s" \
    "(GET p99 $(ms "$(field service-max:get p99_us)") ms, POST p99 $(ms "$(field service-max:post p99_us)") ms," \
    "non-2xx $(($(field service-max:get non2xx) + $(field service-max:post non2xx))), $((max_published_after - max_published_before)) events)," \
    "nginx $(field nginx-max:all rps); ratio $(ratio "$(field service-max:all rps)" "$(field nginx-max:all rps)");" \
    "headroom over the offered load $(ratio "$(field service-max:all rps)" "$RATE")x"
  read -r m_service m_broker _ m_wrk m_busy m_other <<<"${CPU[service-max]}"
  echo "  CPU at full speed: tracking-service $m_service ms/s, broker $m_broker, wrk $m_wrk, other processes $m_other, busy $m_busy%"
fi
echo "tracking-service RSS after the fixed-rate run: $((SERVICE_RSS_KB / 1024)) MB; $(grep -c . "$WORK/tracking.log" || true) log lines at $LEVEL"
if [[ -s "$WORK/tracking.log" ]]; then
  echo "tracking-service log (first lines):"
  head -n 5 "$WORK/tracking.log" | cut -c 1-240 | sed 's/^/  /'
fi

verdict() { if awk "BEGIN { exit !($2) }"; then echo "  ok    $1"; else echo "  MISS  $1"; fi; }
echo "Targets:"
verdict "GET …/tracking p99 $(ms "$(field service:get p99_us)") ms < 10 ms at $RATE requests/s" "$(field service:get p99_us) < 10000"
verdict "POST …/rider p99 $(ms "$(field service:post p99_us)") ms < 10 ms at $RATE requests/s" "$(field service:post p99_us) < 10000"
verdict "every answer 2xx ($(field service:get non2xx) + $(field service:post non2xx) others, $(field service:all socket_errors) socket errors)" \
  "$(field service:get non2xx) + $(field service:post non2xx) + $(field service:all socket_errors) == 0"
verdict "the offered load was sent: $(field service:all rps) >= 0.97 x $RATE requests/s" "$(field service:all rps) >= 0.97 * $RATE"
if [[ "$YARDSTICK" == 1 ]]; then
  per_request() { awk -v c="$1" -v r="$2" 'BEGIN { printf (r > 0 ? sprintf("%.3f", c / r) : "0") }'; }
  service_cpu="$(per_request "$c_service" "$(field service:all rps)")"
  nginx_cpu="$(per_request "$n_nginx" "$(field nginx:all rps)")"
  verdict "CPU per request $service_cpu ms <= 4 x nginx's $nginx_cpu ms (issue 25)" "$service_cpu <= 4 * $nginx_cpu && $nginx_cpu > 0"
fi
if [[ -n "$STREAM_RESULT" ]]; then
  RESULT[streams]="$STREAM_RESULT"
  per_stream_kb="$(awk -v a="$(field streams rss_after_kb)" -v b="$(field streams rss_before_kb)" -v n="$(field streams opened)" \
    'BEGIN { printf (n > 0 ? sprintf("%.1f", (a - b) / n) : "-") }')"
  echo "streams: $(field streams opened) of $(field streams streams) open, $(field streams events) events timed" \
    "(event-to-client p50 $(field streams p50_ms) ms, p99 $(field streams p99_ms) ms, max $(field streams max_ms) ms)," \
    "$(field streams missing) fixes whose event never arrived; tracking-service RSS $(($(field streams rss_before_kb) / 1024)) MB" \
    "before the streams, $(($(field streams rss_after_kb) / 1024)) MB with them open: $per_stream_kb KB per stream"
  verdict "$(field streams opened) tracking streams, event-to-client p99 $(field streams p99_ms) ms < 100 ms" \
    "$(field streams opened) == $(field streams streams) && $(field streams p99_ms) >= 0 && $(field streams p99_ms) < 100"
  verdict "every fix reached its stream ($(field streams missing) missing)" "$(field streams missing) == 0"
elif [[ "$STREAMS" != 0 ]]; then
  echo "  MISS  the streams run gave no result"
fi
