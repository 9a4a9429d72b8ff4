#!/usr/bin/env bash
# PostgreSQL and Redis for cluster mode (docs/SCALING.md), run from a folder of the
# checkout — no system service, nothing outside that folder but Debian's packages.
#
#   services.sh install   install PostgreSQL and Redis from Debian's packages when missing
#   services.sh start     start both (initialising PostgreSQL the first time); idempotent
#   services.sh stop      stop what `start` and serve.py started (pidfiles in the folder)
#   services.sh status    exit 0 when both answer
#
# Settings (environment): CLUSTER_DIR (default var/cluster), CLUSTER_PG_PORT (25432),
# CLUSTER_REDIS_PORT (26379). Unusual ports, so a system PostgreSQL or Redis on the
# standard ones is left alone, and below Linux's ephemeral range (32768–60999): a port
# in it can be taken at any moment as the source port of some outgoing connection, and
# PostgreSQL then fails to start with "Address already in use". That happened on 25432
# too, so `make test-cluster` (test.sh) picks ports free at that moment instead. The
# database is `chatui`, its owner the role `chatui`, trusted on 127.0.0.1 only.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CLUSTER_DIR="$(mkdir -p "${CLUSTER_DIR:-$ROOT/var/cluster}" && cd "${CLUSTER_DIR:-$ROOT/var/cluster}" && pwd)"
PG_PORT="${CLUSTER_PG_PORT:-25432}"
REDIS_PORT="${CLUSTER_REDIS_PORT:-26379}"
DB_NAME=chatui
DB_ROLE=chatui

log() { echo "cluster: $*" >&2; }

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

# PostgreSQL refuses to run as root: as root, run its programs as the `postgres`
# user Debian's package creates; as anyone else, as that user.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# The data folder sits in CLUSTER_DIR unless the `postgres` user cannot reach it
# (a checkout under /root): then in /tmp, one folder per checkout.
pg_data() {
  if [ "$(id -u)" != 0 ] || runuser -u postgres -- test -x "$CLUSTER_DIR"; then
    echo "$CLUSTER_DIR/pg"
  else
    echo "${TMPDIR:-/tmp}/chatui-cluster-$(echo "$CLUSTER_DIR" | md5sum | cut -c1-12)/pg"
  fi
}

install() {
  local missing=()
  [ -n "$(pg_bin)" ] || missing+=(postgresql)
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  [ ${#missing[@]} -gt 0 ] || return 0
  log "installing ${missing[*]} from Debian's packages…"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

pg_running() {
  local data
  data="$(pg_data)"
  [ -f "$data/PG_VERSION" ] && as_pg "$(pg_bin)/pg_ctl" -D "$data" status >/dev/null 2>&1
}

start_postgres() {
  local bin data
  bin="$(pg_bin)"
  data="$(pg_data)"
  if [ ! -f "$data/PG_VERSION" ]; then
    log "initialising PostgreSQL in $data"
    mkdir -p "$data"
    [ "$(id -u)" != 0 ] || chown postgres: "$data"
    chmod 700 "$data"
    as_pg "$bin/initdb" -D "$data" -A trust -U "$DB_ROLE" -E UTF8 --no-instructions >/dev/null
  fi
  if ! pg_running; then
    # TCP on 127.0.0.1 only; no Unix socket (its path could be too long for one).
    as_pg "$bin/pg_ctl" -D "$data" -l "$data/postgres.log" -w -t 60 start -o \
      "-p $PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories= -c max_connections=200" \
      >/dev/null
    log "PostgreSQL on 127.0.0.1:$PG_PORT (log: $data/postgres.log)"
  fi
  if [ -z "$("$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U "$DB_ROLE" -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" ]; then
    "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U "$DB_ROLE" "$DB_NAME"
  fi
}

redis_running() {
  redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG
}

start_redis() {
  redis_running && return 0
  # A channel layer only: nothing to persist.
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
    --daemonize yes --dir "$CLUSTER_DIR" \
    --pidfile "$CLUSTER_DIR/redis.pid" --logfile "$CLUSTER_DIR/redis.log"
  for _ in $(seq 100); do
    redis_running && break
    sleep 0.1
  done
  redis_running || { log "Redis did not start; see $CLUSTER_DIR/redis.log"; exit 1; }
  log "Redis on 127.0.0.1:$REDIS_PORT (log: $CLUSTER_DIR/redis.log)"
}

stop_pidfile() {  # stop_pidfile FILE NAME: SIGTERM the process, wait until it is gone
  [ -f "$1" ] || return 0
  local pid
  pid="$(cat "$1")"
  if kill "$pid" 2>/dev/null; then
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    log "$2 stopped"
  fi
  rm -f "$1"
}

stop() {
  stop_pidfile "$CLUSTER_DIR/web.pid" "web processes and run workers"
  if pg_running; then
    as_pg "$(pg_bin)/pg_ctl" -D "$(pg_data)" -m fast -w stop >/dev/null
    log "PostgreSQL stopped"
  fi
  stop_pidfile "$CLUSTER_DIR/redis.pid" "Redis"
}

case "${1:-}" in
  install) install ;;
  start)
    install
    start_postgres
    start_redis
    ;;
  stop) stop ;;
  status) pg_running && redis_running ;;
  *)
    echo "usage: $0 install|start|stop|status" >&2
    exit 2
    ;;
esac
