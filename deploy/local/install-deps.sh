#!/usr/bin/env bash
# Installs the Debian packages Grocer needs, only those that are missing (fast no-op otherwise).
# Runs as root (or through sudo). Never leaves a system-wide RabbitMQ or nginx running: the
# project starts its own private ones (deploy/local/rabbitmq.sh, deploy/local/gateway.sh).
set -euo pipefail

PACKAGES=(
  rabbitmq-server librabbitmq-dev libmicrohttpd-dev libsqlite3-dev libssl-dev libcurl4-openssl-dev python3-pika python3-h2
  postgresql libpq-dev wrk nginx-light curl python3 python3-yaml sqlite3 openssl
)

log() { echo "install-deps: $*" >&2; }

missing=()
for package in "${PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)"
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done
((${#missing[@]} == 0)) && exit 0

SUDO=()
if ((EUID != 0)); then
  command -v sudo >/dev/null || { log "need root to install: ${missing[*]}"; exit 1; }
  SUDO=(sudo)
fi

# Package scripts must not start system daemons (they would take ports 5672 and 80). Debian's
# way is a policy-rc.d that denies every action; put one in place for the install if none is there.
POLICY=/usr/sbin/policy-rc.d
added_policy=0
if [[ ! -e "$POLICY" ]]; then
  printf '#!/bin/sh\n# Added by Grocer install-deps.sh for the duration of an install.\nexit 101\n' |
    "${SUDO[@]}" tee "$POLICY" >/dev/null
  "${SUDO[@]}" chmod 755 "$POLICY"
  added_policy=1
fi
remove_policy() { if ((added_policy)); then "${SUDO[@]}" rm -f "$POLICY"; fi; }
trap remove_policy EXIT

log "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -o Dpkg::Use-Pty=0 \
  -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"

# Belt and braces: if a package script started a system daemon anyway, stop it.
if [[ -s /run/nginx.pid ]] && kill -0 "$(cat /run/nginx.pid)" 2>/dev/null; then
  log "stopping the system nginx the package started"
  "${SUDO[@]}" nginx -s quit || true
fi
if [[ -s /run/rabbitmq/pid ]] && kill -0 "$(cat /run/rabbitmq/pid)" 2>/dev/null; then
  log "stopping the system RabbitMQ the package started"
  "${SUDO[@]}" /etc/init.d/rabbitmq-server stop || true
fi
log "done"
