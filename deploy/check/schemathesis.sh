#!/usr/bin/env bash
# Fuzzes every service's HTTP API against its own OpenAPI document with schemathesis (PyPI):
# stateless (examples, coverage and fuzzing phases, positive and negative data) and stateful
# (links inferred from the documents and the responses), with these checks on every response:
# not_a_server_error, status_code_conformance, content_type_conformance and
# response_schema_conformance.
#
#   deploy/check/schemathesis.sh                 a few thousand cases per service
#   deploy/check/schemathesis.sh --quick         about a hundred cases per service (CI)
#   deploy/check/schemathesis.sh --max-examples N [--services "stock-service cart-service"]
#                                [--seed N] [--keep]
#
# It builds nothing: it runs the executables in $GROCER_BIN_DIR (default .build/debug). It starts
# the five services on free ports with fresh data (the demo assortment and promo codes loaded),
# on a RabbitMQ vhost of its own on the shared node (deploy/local/rabbitmq.sh must answer), runs
# schemathesis against each service's GET /openapi.json with a customer token (staff-only
# operations with a staff token for every hub, rider-only ones with a rider token), prints the
# totals per service and exits non-zero on any failure. Whatever it started is stopped and the
# vhost deleted on exit; --keep leaves the work folder (logs, reports) behind.
# schemathesis is installed with pip (pinned below) when it is missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SCHEMATHESIS_VERSION="${GROCER_SCHEMATHESIS_VERSION:-4.32.5}"
BIN_DIR="${GROCER_BIN_DIR:-$ROOT/.build/debug}"
RABBITMQ="${GROCER_RABBITMQ_SCRIPT:-$ROOT/deploy/local/rabbitmq.sh}"
AMQP_PORT="${GROCER_AMQP_PORT:-5672}"
ALL_SERVICES="stock-service cart-service order-service tracking-service notify-gateway"

MAX_EXAMPLES=""
QUICK=0
SEED="${GROCER_FUZZ_SEED:-}"
KEEP=0
SERVICES="$ALL_SERVICES"
usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case "$1" in
    --quick) QUICK=1 ;;
    --max-examples) MAX_EXAMPLES="${2:?}"; shift ;;
    --services) SERVICES="${2:?}"; shift ;;
    --seed) SEED="${2:?}"; shift ;;
    --keep) KEEP=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "schemathesis.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
# Examples per operation and phase (schemathesis's --max-examples). The default gives a few
# thousand cases per service; --quick about a hundred.
if [[ -z "$MAX_EXAMPLES" ]]; then
  if ((QUICK)); then MAX_EXAMPLES=5; else MAX_EXAMPLES=150; fi
fi
STATEFUL_STEPS=$((QUICK ? 3 : 10))

log() { echo "schemathesis.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# --- schemathesis itself ----------------------------------------------------------------------
if ! python3 -m schemathesis.cli --version 2>/dev/null | grep -q "version $SCHEMATHESIS_VERSION\$"; then
  log "installing schemathesis==$SCHEMATHESIS_VERSION with pip"
  python3 -m pip install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" >&2 \
    || die "pip install schemathesis==$SCHEMATHESIS_VERSION failed"
fi

for name in $SERVICES grocer-token; do
  [[ -x "$BIN_DIR/$name" ]] || die "$BIN_DIR/$name is missing: build first (swift build)"
done
# The node is shared (other checks may restart it): wait up to a minute for it.
ctl_retry() {
  local _
  for _ in $(seq 1 30); do
    if bash "$RABBITMQ" ctl "$@" >/dev/null 2>&1; then return 0; fi
    sleep 2
  done
  return 1
}
ctl_retry status || die "RabbitMQ does not answer on 127.0.0.1:$AMQP_PORT (bash $RABBITMQ start)"

# --- a world of our own -----------------------------------------------------------------------
RUN="fuzz-$$-$RANDOM"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/grocer-$RUN.XXXX")"
VHOST="grocer-$RUN"
PIDS=()
cleanup() {
  local rc=$? pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  bash "$RABBITMQ" ctl delete_vhost "$VHOST" >/dev/null 2>&1 || true
  if ((KEEP)); then log "work folder kept: $WORK"; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ctl_retry add_vhost "$VHOST" || die "could not add the vhost $VHOST"
ctl_retry set_permissions -p "$VHOST" guest '.*' '.*' '.*' || die "could not set permissions on $VHOST"
bash "$RABBITMQ" policy "$VHOST" || die "could not set the dead-letter policy on $VHOST"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

export GROCER_AMQP_URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/$VHOST"
export GROCER_JWT_SECRET="${GROCER_JWT_SECRET:-grocer-local-development-secret-change-me}"
export GROCER_HTTP_HOST=127.0.0.1
export GROCER_LOG_LEVEL="${GROCER_LOG_LEVEL:-warning}"
# The simulated payment provider answers at once (its hang token is for the fault drills).
export GROCER_PAYMENT_SIM_HANG=1

declare -A PORT PID
# Every service runs (OrderService needs Cart and Stock for a checkout, the others feed on events),
# whichever are fuzzed; the demo data goes in first.
for name in $ALL_SERVICES; do
  PORT[$name]="$(free_port)"
  data="$WORK/data/$name"
  mkdir -p "$data"
  if [[ "$name" == stock-service || "$name" == cart-service ]]; then
    GROCER_HTTP_PORT="${PORT[$name]}" GROCER_DATA_DIR="$data" "$BIN_DIR/$name" load-demo \
      >>"$WORK/$name.log" 2>&1 </dev/null || die "$name load-demo failed (see $WORK/$name.log)"
  fi
  GROCER_HTTP_PORT="${PORT[$name]}" GROCER_DATA_DIR="$data" "$BIN_DIR/$name" >>"$WORK/$name.log" 2>&1 </dev/null &
  PIDS+=("$!")
  PID[$name]=$!
  deadline=$((SECONDS + 60))
  until [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:${PORT[$name]}/health/ready")" == 200 ]]; do
    kill -0 "${PIDS[-1]}" 2>/dev/null || { tail -n 20 "$WORK/$name.log" >&2; die "$name exited"; }
    ((SECONDS < deadline)) || { tail -n 20 "$WORK/$name.log" >&2; die "$name did not become ready"; }
    sleep 0.2
  done
  log "$name ready on 127.0.0.1:${PORT[$name]}"
done

token() { "$BIN_DIR/grocer-token" "$@" --ttl 86400; }
CUSTOMER="$(token fuzz-customer)"
STAFF="$(token fuzz-staff --role staff --hubs '*')"
RIDER="$(token fuzz-rider --role rider)"

# Real resources for the fuzzing customer, so that links reach past 404: one order placed and
# confirmed at h3 (open around the clock; tracking starts from its order.confirmed), then a cart
# with a line in it.
call() { # METHOD URL TOKEN [BODY [HEADER]]
  curl -s --max-time 15 -X "$1" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' \
    ${5:+-H "$5"} ${4:+-d "$4"} "$2"
}
CART="http://127.0.0.1:${PORT[cart-service]}/v1/hubs/h3/cart"
call PUT "$CART/items/p00012" "$CUSTOMER" '{"quantity": 4}' >/dev/null
version="$(call GET "$CART" "$CUSTOMER" | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')"
order="$(call POST "http://127.0.0.1:${PORT[order-service]}/v1/orders" "$CUSTOMER" \
  "{\"hub\":\"h3\",\"cartVersion\":$version,\"payment\":{\"method\":\"card\",\"token\":\"tok\"},\"deliverTo\":{\"lat\":52.5155,\"lng\":13.454}}" \
  "Idempotency-Key: fuzz-seed-$RUN")"
ORDER_ID="$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("orderId", ""))' <<<"$order" 2>/dev/null || true)"
[[ "$order" == *'"status":"confirmed"'* ]] || log "warning: the seed order was not confirmed: $order"
call PUT "$CART/items/p00012" "$CUSTOMER" '{"quantity": 2}' >/dev/null

# --- one schemathesis run per service ---------------------------------------------------------
# The configuration: the customer's token on every operation, except those a customer may not
# call (x-grocer-roles without "customer"): staff's token where staff may, else the rider's. An
# operation on one order (path parameter `id`) gets the seeded order's id: random ids are 404s.
# The roles are read from the document the service serves (its own part and the shared one).
write_config() {
  local service=$1 config=$2 document="$WORK/$service.openapi.json"
  curl -sf --max-time 15 -o "$document" "http://127.0.0.1:${PORT[$service]}/openapi.json" \
    || die "$service did not answer GET /openapi.json"
  python3 - "$document" "$config" "$CUSTOMER" "$STAFF" "$RIDER" \
    "$STATEFUL_STEPS" "$ORDER_ID" <<'PY'
import json, sys
document, config, customer, staff, rider, steps, order_id = sys.argv[1:8]
tokens = {"customer": customer, "staff": staff, "rider": rider}
lines = [
    f'headers = {{ Authorization = "Bearer {customer}" }}',
    "[phases.stateful]",
    f"max-steps = {steps}",
    'inference.algorithms = ["location-headers", "dependency-analysis"]',
]
for path, item in json.load(open(document))["paths"].items():
    for method, op in item.items():
        if not isinstance(op, dict) or "operationId" not in op:
            continue
        wanted = op.get("x-grocer-roles") or ["customer"]
        role = "customer" if "customer" in wanted else "staff" if "staff" in wanted else "rider"
        pinned = order_id and any(p.get("in") == "path" and p.get("name") == "id" for p in op.get("parameters", []))
        if role == "customer" and not pinned:
            continue
        lines += ["[[operations]]", f'include-operation-id = "{op["operationId"]}"',
                  f'headers = {{ Authorization = "Bearer {tokens[role]}" }}']
        if pinned:
            lines.append(f'parameters = {{ "path.id" = "{order_id}" }}')
open(config, "w").write("\n".join(lines) + "\n")
PY
}

PHASES=examples,coverage,fuzzing,stateful
# The tracking stream (streamTracking) stays open until its order is final, so every case would
# wait out the time-out: TrackingStreamTests covers it instead.
CHECKS=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance
declare -A RESULT
failed=0
for service in $SERVICES; do
  config="$WORK/$service.toml"
  write_config "$service" "$config"
  report="$WORK/report-$service"
  args=(--config-file "$config" run "http://127.0.0.1:${PORT[$service]}/openapi.json"
    --checks "$CHECKS" --phases "$PHASES" --max-examples "$MAX_EXAMPLES"
    --workers 1 --request-timeout 15 --no-color --suppress-health-check all
    --exclude-operation-id streamTracking
    --generation-database none --report ndjson --report-dir "$report")
  [[ -n "$SEED" ]] && args+=(--seed "$SEED")
  log "=== $service: schemathesis ${args[*]:2}"
  started=$SECONDS
  rc=0
  # CI captures everything; the full output goes to the log, the summary to the terminal.
  # From the work folder: schemathesis keeps a cache (.schemathesis/) in the current one.
  # The hooks sign the payment provider's callbacks (deploy/check/schemathesis_hooks.py).
  (cd "$WORK" && PYTHONPATH="$ROOT/deploy/check${PYTHONPATH:+:$PYTHONPATH}" SCHEMATHESIS_HOOKS=schemathesis_hooks \
    python3 -m schemathesis.cli "${args[@]}") >"$WORK/$service.schemathesis.txt" 2>&1 || rc=$?
  summary="$(python3 "$ROOT/deploy/check/schemathesis_summary.py" "$report")"
  RESULT[$service]="$summary ($((SECONDS - started)) s)"
  if ((rc != 0)); then
    failed=1
    # What failed, as schemathesis printed it (failures, errors and their curl reproductions).
    sed -n '/^=* FAILURES =*$/,$p;/^=* ERRORS =*$/,$p' "$WORK/$service.schemathesis.txt" | head -n 200 >&2
    tail -n 30 "$WORK/$service.schemathesis.txt" >&2
    RESULT[$service]="FAILED (exit $rc) ${RESULT[$service]}"
  fi
  # A service that died under the fuzzing is a failure even if every answer conformed.
  for name in $ALL_SERVICES; do
    if ! kill -0 "${PID[$name]}" 2>/dev/null; then
      failed=1
      RESULT[$service]="${RESULT[$service]}; $name CRASHED"
      tail -n 20 "$WORK/$name.log" >&2
    fi
  done
done

echo
echo "schemathesis $SCHEMATHESIS_VERSION, --max-examples $MAX_EXAMPLES, stateful max-steps $STATEFUL_STEPS${SEED:+, seed $SEED}"
for service in $SERVICES; do
  printf '  %-17s %s\n' "$service" "${RESULT[$service]}"
done
if ((failed)); then
  echo "schemathesis: FAILED (logs: $WORK, kept)"
  KEEP=1
  exit 1
fi
echo "schemathesis: every service passed"
