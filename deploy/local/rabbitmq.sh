#!/usr/bin/env bash
# A private RabbitMQ node on loopback for development and tests, run as root without systemd.
#
#   deploy/local/rabbitmq.sh start     start the node (returns 0 at once if one answers on the port)
#   deploy/local/rabbitmq.sh stop      shut the node down and stop epmd
#   deploy/local/rabbitmq.sh status    exit 0 if the AMQP port answers
#   deploy/local/rabbitmq.sh reset     empty the running node: every vhost, queue and message
#                                      goes (durable queues keep events while their service is
#                                      down, so a local node collects them); / and its policy
#                                      come back, services re-declare their queues on reconnect
#   deploy/local/rabbitmq.sh ctl ARGS  run rabbitmqctl against the node (e.g. `ctl close_all_connections test`)
#   deploy/local/rabbitmq.sh policy [VHOST]
#                                      set the dead-letter policy on VHOST (default /); `start` does it for /
#   deploy/local/rabbitmq.sh definitions
#                                      import deploy/rabbitmq/definitions.json (topology and policy),
#                                      after `migrate /`
#   deploy/local/rabbitmq.sh migrate [VHOST]
#                                      clear older builds' per-queue dead-letter policies and name
#                                      their old-style queues (deletes nothing)
#   deploy/local/rabbitmq.sh cluster start|stop|status|kill N|start-node N|ctl N ARGS|urls
#                                      three nodes in one cluster instead of the single node:
#                                      grocer-N@localhost on AMQP ports 5672-5674, distribution
#                                      ports 25672-25674, state in var/rabbitmq/grocer-N (names
#                                      and ports: GROCER_RABBITMQ_CLUSTER_NAME, _CLUSTER_PORT);
#                                      `kill N` is SIGKILL of node N (drills), `start-node N` brings
#                                      it back, `ctl N` runs rabbitmqctl against node N, `urls`
#                                      prints GROCER_AMQP_URLS for the services
#
# Environment:
#   GROCER_AMQP_PORT             AMQP port (default 5672)
#   GROCER_RABBITMQ_DIST_PORT    Erlang distribution port (default 25672)
#   GROCER_RABBITMQ_NODENAME     node name (default grocer@localhost)
#   GROCER_RABBITMQ_MANAGEMENT   1 enables the management plugin on 127.0.0.1:15672 (slower start)
#   GROCER_VAR_DIR               state folder (default <project>/var); the node lives in its rabbitmq/
#   GROCER_RABBITMQ_BASE         the node's own state folder (default $GROCER_VAR_DIR/rabbitmq)
#   GROCER_BROKER                cluster: start, stop, status and the rest act on the cluster
#                                (`make run BROKER=cluster`); single (default): on the single node
#   GROCER_RABBITMQ_BUSY_WAIT    1 keeps Erlang's scheduler busy-waiting (off by default: on a few
#                                shared cores it took CPU the services needed)
#
# See /work/shared/PLATFORM.md: the /usr/sbin wrappers switch user, so we call the scripts in
# /usr/lib/rabbitmq/bin directly with an environment that keeps everything in one folder.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
VAR_DIR="${GROCER_VAR_DIR:-$PROJECT_ROOT/var}"
BASE="${GROCER_RABBITMQ_BASE:-$VAR_DIR/rabbitmq}"
BIN=/usr/lib/rabbitmq/bin

PORT="${GROCER_AMQP_PORT:-5672}"
DIST_PORT="${GROCER_RABBITMQ_DIST_PORT:-25672}"
MANAGEMENT="${GROCER_RABBITMQ_MANAGEMENT:-0}"
# A fixed cookie, so that `ctl` works whichever checkout started the node on this machine.
COOKIE="grocer-local-development-cookie"

export HOME="$BASE/home"
export RABBITMQ_NODENAME="${GROCER_RABBITMQ_NODENAME:-grocer@localhost}"
export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
export RABBITMQ_NODE_PORT="$PORT"
export RABBITMQ_DIST_PORT="$DIST_PORT"
export ERL_EPMD_ADDRESS=127.0.0.1
export RABBITMQ_MNESIA_BASE="$BASE/mnesia"
export RABBITMQ_LOG_BASE="$BASE/log"
export RABBITMQ_CONFIG_FILE="$BASE/rabbitmq.conf"
export RABBITMQ_ENABLED_PLUGINS_FILE="$BASE/enabled_plugins"
export RABBITMQ_PID_FILE="$BASE/rabbitmq.pid"
# Erlang's schedulers spin while idle before they sleep (busy waiting). On a machine whose few
# cores the broker shares with the services and the load generator, that spinning takes CPU the
# others need: GROCER_RABBITMQ_BUSY_WAIT=1 keeps Erlang's default.
BUSY_WAIT_ARGS="+sbwt none +sbwtdcpu none +sbwtdio none"
[[ "${GROCER_RABBITMQ_BUSY_WAIT:-0}" == 1 ]] && BUSY_WAIT_ARGS=""
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1} $BUSY_WAIT_ARGS"

log() { echo "rabbitmq.sh: $*" >&2; }

# Whether `start` sets the dead-letter policy on / (a cluster's nodes leave it to the cluster:
# policies are cluster-wide, and a node rejoining may not take one yet).
NODE_POLICY="${GROCER_RABBITMQ_NODE_POLICY:-1}"
# Whether this node is one of a cluster's (set by `cluster`).
CLUSTERED="${GROCER_RABBITMQ_CLUSTERED:-0}"

# True if something accepts TCP connections on 127.0.0.1:PORT (default this node's $PORT).
port_answers() {
  (exec 3<>"/dev/tcp/127.0.0.1/${1:-$PORT}") 2>/dev/null
}

# Prints the pid from the pid file if that process is alive.
live_pid() {
  local pid
  [[ -s "$RABBITMQ_PID_FILE" ]] || return 1
  pid="$(tr -dc '0-9' <"$RABBITMQ_PID_FILE")"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

ensure_cookie() {
  mkdir -p "$HOME"
  local cookie_file="$HOME/.erlang.cookie"
  if [[ ! -f "$cookie_file" ]] || [[ "$(cat "$cookie_file")" != "$COOKIE" ]]; then
    rm -f "$cookie_file"
    printf '%s' "$COOKIE" >"$cookie_file"
    chmod 400 "$cookie_file"
  fi
}

prepare() {
  ensure_cookie
  mkdir -p "$RABBITMQ_MNESIA_BASE" "$RABBITMQ_LOG_BASE"
  {
    echo "listeners.tcp.default = 127.0.0.1:$PORT"
    echo "loopback_users.guest = true"
    # A cluster's node that finds itself in a minority stops serving (docs/broker-cluster.md).
    if [[ "$CLUSTERED" == 1 ]]; then echo "cluster_partition_handling = pause_minority"; fi
    if [[ "$MANAGEMENT" == "1" ]]; then
      echo "management.tcp.ip = 127.0.0.1"
      echo "management.tcp.port = 15672"
    fi
  } >"$RABBITMQ_CONFIG_FILE"
  if [[ "$MANAGEMENT" == "1" ]]; then
    echo "[rabbitmq_management]." >"$RABBITMQ_ENABLED_PLUGINS_FILE"
  else
    echo "[]." >"$RABBITMQ_ENABLED_PLUGINS_FILE"
  fi
}

# The dead-letter policy every Grocer vhost needs (the same as deploy/rabbitmq/definitions.json's;
# EventTopology in Shared/GrocerCore names it): every queue but the broker's own (amq.*) and the
# parking queues dead-letters to the grocer.parking headers exchange, and a quorum queue parks a
# message returned more than 5 times. The services declare their queues without dead-letter
# arguments, so without this policy a poison message would be redelivered for ever.
set_policy() {
  local vhost="${1:-/}"
  if "$BIN/rabbitmqctl" set_policy -p "$vhost" --apply-to queues --priority 0 grocer-dead-letter \
    '^(?!amq\.)(?!.*\.parking$)' '{"dead-letter-exchange":"grocer.parking","delivery-limit":5}' >/dev/null 2>&1; then
    return 0
  fi
  log "could not set the dead-letter policy on vhost $vhost"
  return 1
}

start() {
  if port_answers; then
    log "a broker already answers on 127.0.0.1:$PORT"
    ensure_cookie
    [[ "$NODE_POLICY" == 1 ]] && set_policy /
    return 0
  fi
  prepare
  if ! live_pid >/dev/null; then
    rm -f "$RABBITMQ_PID_FILE"
    log "starting $RABBITMQ_NODENAME on 127.0.0.1:$PORT (state in $BASE)"
    # The detached node (and epmd) must not keep the caller's stdout/stderr open: a caller that
    # reads them to the end (a test starting the broker) would wait for the node to exit.
    "$BIN/rabbitmq-server" -detached </dev/null >>"$RABBITMQ_LOG_BASE/detached.log" 2>&1
  else
    log "node process $(live_pid) is running; waiting for it"
  fi
  # `wait` needs the pid file, which the detached server writes shortly after starting.
  for _ in $(seq 1 100); do
    [[ -s "$RABBITMQ_PID_FILE" ]] && break
    sleep 0.1
  done
  if ! "$BIN/rabbitmqctl" wait --timeout 60 "$RABBITMQ_PID_FILE" >/dev/null; then
    log "the node did not start; see $RABBITMQ_LOG_BASE"
    return 1
  fi
  for _ in $(seq 1 50); do
    if port_answers; then
      if [[ "$NODE_POLICY" == 1 ]]; then set_policy / || return 1; fi
      log "ready"
      return 0
    fi
    sleep 0.1
  done
  log "the node runs but 127.0.0.1:$PORT does not answer; see $RABBITMQ_LOG_BASE"
  return 1
}

# Our topology and policies (deploy/rabbitmq/definitions.json: the exchanges, each service's
# queue and parking queue, their bindings and the dead-letter policies), so events published
# before a service first starts are kept. `make run` imports them (`definitions`); tests and
# benchmarks do not. Idempotent; a failure is reported, not fatal (the services declare their
# own queues too).
import_definitions() {
  local definitions="$PROJECT_ROOT/deploy/rabbitmq/definitions.json"
  [[ -f "$definitions" ]] || return 0
  if "$BIN/rabbitmqctl" import_definitions "$definitions" >/dev/null 2>&1; then
    log "topology and policies loaded from deploy/rabbitmq/definitions.json"
  else
    log "warning: could not import deploy/rabbitmq/definitions.json"
  fi
}

# Builds before the dead-letter policy declared the service queues with x-dead-letter-* and
# x-delivery-limit arguments and set one policy per queue (grocer-dead-letter-<queue>). The
# services' declarations no longer match such a queue (RabbitMQ refuses them as inequivalent),
# and the old policies would outrank the new one. So the old policies go, and each old-style
# queue is named with what to do. Such a queue is not deleted here: quorum queues cannot be
# deleted "if empty" (RabbitMQ 3.10 answers not_implemented) and list_queues' counts of quorum
# queues lag by seconds, so no script can be sure it holds nothing. Idempotent.
migrate() {
  local vhost="${1:-/}" name messages arguments policy listing policies
  policies="$("$BIN/rabbitmqctl" list_policies -p "$vhost" --quiet --no-table-headers 2>/dev/null)" || {
    log "warning: could not list the policies of vhost $vhost"
    return 0
  }
  while IFS=$'\t' read -r _ policy _; do
    [[ "$policy" == grocer-dead-letter-* ]] || continue
    "$BIN/rabbitmqctl" clear_policy -p "$vhost" "$policy" </dev/null >/dev/null &&
      log "cleared the policy $policy (the policy grocer-dead-letter covers every queue now)"
  done <<<"$policies"
  listing="$("$BIN/rabbitmqctl" list_queues -p "$vhost" name messages arguments --quiet --no-table-headers 2>/dev/null)" || {
    log "warning: could not list the queues of vhost $vhost"
    return 0
  }
  while IFS=$'\t' read -r name messages arguments; do
    [[ -n "$name" && "$name" != *.parking && "$arguments" == *x-dead-letter-exchange* ]] || continue
    log "warning: $name (vhost $vhost, about $messages messages) was declared with dead-letter arguments by an older build, which the services now refuse: once it is drained (by the older build), \`deploy/local/rabbitmq.sh ctl delete_queue -p $vhost $name\`, then start the services again"
  done <<<"$listing"
}

stop() {
  local pid
  pid="$(live_pid || true)"
  if "$BIN/rabbitmqctl" shutdown >/dev/null 2>&1; then
    log "node stopped"
  elif [[ -n "$pid" ]]; then
    log "shutdown failed; terminating pid $pid"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  else
    log "no node running"
  fi
  rm -f "$RABBITMQ_PID_FILE"
  # Stop epmd only if no other Erlang node still relies on it.
  if ! epmd -names 2>/dev/null | grep -q '^name '; then
    epmd -kill >/dev/null 2>&1 || true
  fi
  return 0
}

reset() {
  port_answers || { log "no node answers on 127.0.0.1:$PORT"; return 1; }
  "$BIN/rabbitmqctl" stop_app >/dev/null &&
    "$BIN/rabbitmqctl" reset >/dev/null &&
    "$BIN/rabbitmqctl" start_app >/dev/null || { log "reset failed"; return 1; }
  set_policy / || return 1
  log "node reset: every queue and message is gone"
}

status() {
  if port_answers; then
    echo "running: 127.0.0.1:$PORT answers"
    return 0
  fi
  echo "not running: 127.0.0.1:$PORT does not answer"
  return 1
}

# --- The three-node cluster: each node is this script run with its own name, ports and folder.
# GROCER_RABBITMQ_CLUSTER_NAME (default grocer) names the nodes <name>-N@localhost;
# GROCER_RABBITMQ_CLUSTER_PORT (default 5672) is node 1's AMQP port, node N's is one more each,
# its distribution port 20000 above. The tests run a cluster of their own beside the single node.
CLUSTER_SIZE=3
CLUSTER_NAME="${GROCER_RABBITMQ_CLUSTER_NAME:-grocer}"
CLUSTER_PORT="${GROCER_RABBITMQ_CLUSTER_PORT:-5672}"
node_port() { echo "$((CLUSTER_PORT + $1 - 1))"; }
cluster_node() { # N COMMAND...: runs this script's COMMAND as cluster node N
  local n="$1"
  shift
  GROCER_RABBITMQ_NODE_POLICY=0 GROCER_RABBITMQ_CLUSTERED=1 GROCER_RABBITMQ_NODENAME="$CLUSTER_NAME-$n@localhost" GROCER_AMQP_PORT="$(node_port "$n")" \
    GROCER_RABBITMQ_DIST_PORT="$(($(node_port "$n") + 20000))" \
    GROCER_RABBITMQ_BASE="$VAR_DIR/rabbitmq/$CLUSTER_NAME-$n" bash "$SCRIPT_DIR/rabbitmq.sh" "$@"
}

cluster_ctl() { # N ARGS...: rabbitmqctl against node N
  local n="$1"
  shift
  cluster_node "$n" ctl "$@"
}

# Whether node N already belongs to a cluster with node 1.
cluster_joined() {
  cluster_ctl "$1" cluster_status --formatter json 2>/dev/null | grep -q "\"$CLUSTER_NAME-1@localhost\""
}

cluster_start() {
  local n failed=0 pids=()
  if port_answers "$(node_port 1)" && ! cluster_ctl 1 status >/dev/null 2>&1; then
    log "127.0.0.1:$(node_port 1) is taken by another node (the single one? \`$0 stop\` it first)"
    return 1
  fi
  # All at once: a node that was clustered before waits at boot for the others (Mnesia's
  # tables), so started one after the other the first would time out waiting for the rest.
  for n in $(seq 1 "$CLUSTER_SIZE"); do
    cluster_node "$n" start &
    pids+=($!)
  done
  for n in "${pids[@]}"; do wait "$n" || failed=1; done
  ((failed == 0)) || { log "a node did not start; see $VAR_DIR/rabbitmq/$CLUSTER_NAME-*/log"; return 1; }
  for n in $(seq 2 "$CLUSTER_SIZE"); do
    if ! cluster_joined "$n"; then
      log "joining $CLUSTER_NAME-$n@localhost to $CLUSTER_NAME-1@localhost"
      # A fresh node is reset before it joins (its own / vhost goes; the cluster's stays).
      cluster_ctl "$n" stop_app >/dev/null 2>&1 &&
        cluster_ctl "$n" reset >/dev/null 2>&1 &&
        cluster_ctl "$n" join_cluster "$CLUSTER_NAME-1@localhost" >/dev/null 2>&1 &&
        cluster_ctl "$n" start_app >/dev/null 2>&1 || { log "$CLUSTER_NAME-$n@localhost could not join"; return 1; }
    fi
  done
  cluster_node 1 policy / || return 1
  log "cluster of $CLUSTER_SIZE nodes ready: $(cluster_urls)"
}

cluster_stop() {
  local n
  for n in $(seq "$CLUSTER_SIZE" -1 1); do cluster_node "$n" stop; done
}

cluster_status() {
  local n up=0 first=""
  for n in $(seq 1 "$CLUSTER_SIZE"); do
    if port_answers "$(node_port "$n")"; then
      echo "$CLUSTER_NAME-$n@localhost: running on 127.0.0.1:$(node_port "$n")"
      up=$((up + 1))
      first="${first:-$n}"
    else
      echo "$CLUSTER_NAME-$n@localhost: not running"
    fi
  done
  [[ -n "$first" ]] && echo "as $CLUSTER_NAME-$first@localhost sees it: $(cluster_ctl "$first" cluster_status \
    --formatter json 2>/dev/null | grep -o '"running_nodes":\[[^]]*\]')"
  ((up == CLUSTER_SIZE))
}

# SIGKILL of this node's Erlang VM and nothing else (`cluster kill N` runs it as node N).
kill_node() {
  local pid
  pid="$(live_pid)" || { log "$RABBITMQ_NODENAME is not running"; return 1; }
  kill -9 "$pid" && log "killed $RABBITMQ_NODENAME (pid $pid)"
  rm -f "$RABBITMQ_PID_FILE"
}

cluster_urls() {
  local n urls=()
  for n in $(seq 1 "$CLUSTER_SIZE"); do urls+=("amqp://guest:guest@127.0.0.1:$(node_port "$n")/"); done
  (IFS=,; echo "${urls[*]}")
}

cluster() {
  local node="${2:-}"
  case "${1:-}" in
    start) cluster_start ;;
    stop) cluster_stop ;;
    status) cluster_status ;;
    kill) [[ "$node" =~ ^[1-3]$ ]] || { log "cluster kill N: N is 1, 2 or 3"; return 2; }; cluster_node "$node" kill-node ;;
    start-node) [[ "$node" =~ ^[1-3]$ ]] || { log "cluster start-node N: N is 1, 2 or 3"; return 2; }; cluster_node "$node" start ;;
    urls) cluster_urls ;;
    ctl) [[ "$node" =~ ^[1-3]$ ]] || { log "cluster ctl N ARGS: N is 1, 2 or 3"; return 2; }; shift 2; cluster_ctl "$node" "$@" ;;
    *) echo "usage: $0 cluster start|stop|status|kill N|start-node N|ctl N ARGS|urls" >&2; return 2 ;;
  esac
}

# GROCER_BROKER=cluster (`make run BROKER=cluster`): the plain commands act on the local cluster
# (start, stop and status on all three nodes, the others through node 1).
if [[ "${GROCER_BROKER:-single}" == cluster && -z "${GROCER_RABBITMQ_NODENAME:-}" ]]; then
  case "${1:-}" in
    start) cluster_start; exit ;;
    stop) cluster_stop; exit ;;
    status) cluster_status; exit ;;
    reset | definitions | migrate | policy | ctl | kill-node) cluster_node 1 "$@"; exit ;;
  esac
fi

case "${1:-}" in
  cluster) shift; cluster "$@" ;;
  start) start ;;
  stop) stop ;;
  kill-node) kill_node ;;
  status) status ;;
  reset) ensure_cookie; reset ;;
  definitions) ensure_cookie; migrate /; import_definitions ;;
  migrate) ensure_cookie; migrate "${2:-/}" ;;
  policy) ensure_cookie; set_policy "${2:-/}" ;;
  ctl) shift; ensure_cookie; exec "$BIN/rabbitmqctl" "$@" ;;
  *) echo "usage: $0 start|stop|status|reset|definitions|migrate [VHOST]|policy [VHOST]|ctl ARGS...|cluster ..." >&2; exit 2 ;;
esac
