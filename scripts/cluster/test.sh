#!/usr/bin/env bash
# `make test-cluster`: the non-browser suite and tests/cluster/ against PostgreSQL
# and Redis (DATABASE_URL and REDIS_URL come from the Makefile). Starts the services
# when they are not running, and then stops them again at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
services=scripts/cluster/services.sh

if ! "$services" status; then
  trap '"$services" stop' EXIT
  "$services" start
fi
"${PYTHON:-.venv/bin/python}" -m pytest -m "not browser" "$@"
