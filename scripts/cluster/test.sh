#!/usr/bin/env bash
# `make test-cluster`: the non-browser suite and tests/cluster/ against PostgreSQL
# and Redis (DATABASE_URL and REDIS_URL come from the Makefile). Uses the services
# when they are already running on the configured ports; else starts its own and
# stops them again at the end.
#
# Its own run on ports free at that moment, chosen below the kernel's ephemeral range:
# twice in CI PostgreSQL would not start on a fixed port ("Address already in use",
# with nothing listening there a moment later), once on 55432 and once on 25432. A
# start that still loses its ports to a race is tried again on others.
set -euo pipefail
cd "$(dirname "$0")/../.."
services=scripts/cluster/services.sh
python="${PYTHON:-.venv/bin/python}"

free_port() {  # a port below 32768 that nothing holds now
  "$python" - <<'EOF'
import random
import socket

for _ in range(500):
    port = random.randint(20000, 32000)
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            continue
    print(port)
    break
else:
    raise SystemExit("no free port between 20000 and 32000")
EOF
}

if ! "$services" status; then
  trap '"$services" stop' EXIT
  redis_db="${REDIS_URL##*/}"
  for attempt in 1 2 3; do
    CLUSTER_PG_PORT="$(free_port)"
    CLUSTER_REDIS_PORT="$(free_port)"
    export CLUSTER_PG_PORT CLUSTER_REDIS_PORT
    export DATABASE_URL="postgres://chatui@127.0.0.1:$CLUSTER_PG_PORT/chatui"
    export REDIS_URL="redis://127.0.0.1:$CLUSTER_REDIS_PORT/${redis_db:-1}"
    if "$services" start; then
      break
    fi
    echo "cluster: could not start on $CLUSTER_PG_PORT/$CLUSTER_REDIS_PORT (attempt $attempt)" >&2
    "$services" stop || true
    [ "$attempt" -lt 3 ] || exit 1
  done
fi
# A test stuck longer than pyproject's pytest-timeout (5 minutes; setup and teardown
# included) fails the run with every thread's stack. (One run hung in an event loop's
# teardown: a consumer on Redis swallowed its cancellation; chatui.consumers now passes
# a cancellation on until the consumer has ended.)
# The pytest process is one "web process" running hundreds of tests' threads: a test
# thread that does database work outside Django's request cycle keeps its pooled
# connection until the thread's connection is closed, and a few such threads drained the
# default pool of 10 for every test after them (stop 35's note). A larger pool here keeps
# one such leak from failing the rest of the run; PostgreSQL allows 200 (services.sh).
export CHATUI_DB_POOL_MAX="${CHATUI_DB_POOL_MAX:-40}"
# In TEST_WORKERS pytest-xdist processes (the Makefile's, 2 by default). Each makes its
# own test database (pytest-django names it for the worker) and its live servers' own
# (tests/support/live.py); Redis database 1 is shared, and every channel and group
# there is named by a conversation's random id.
"$python" -m pytest -m "not browser" -n "${TEST_WORKERS:-2}" "$@"
