# chatui — `make run` serves the app, `make test` runs the whole suite.
# Both work on a fresh machine: they create .venv and install what they need.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make run PORT=9000` serves another port, `HOST=0.0.0.0` every interface (docs/settings.md).
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install chromium run test lint bench clean

# chatui and its runtime client (clients/python: its own package, needing only httpx).
$(STAMP): pyproject.toml clients/python/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ./clients/python -e ".[test]"
	touch $@

install: $(STAMP)

# Browser tests drive Debian's Chromium (Playwright's own download cannot run here).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing Chromium from Debian's packages…"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null; }

run: install
	$(BIN)/python manage.py migrate --noinput -v0
	$(BIN)/python manage.py setup_demo --host $(HOST) --port $(PORT)
	$(BIN)/daphne -b $(HOST) -p $(PORT) config.asgi:application

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The suite in this many pytest-xdist processes (0: in the pytest process itself). Alone,
# one pytest process kept about one of the 2 cores busy; two cut the suite's time by
# about a third, 13:23 → 9:11–9:47 measured quiet (README.md#tests).
TEST_WORKERS ?= 2

test: install chromium
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache

# -- cluster mode (docs/SCALING.md): PostgreSQL + Redis under var/cluster, N web processes --
# `make run-cluster WORKERS=4 RUN_WORKERS=2` serves http://$(HOST):$(PORT) from 4 daphne
# processes, the agent runs going in 2 run workers; `make stop-cluster` stops them all
# and the databases. `make test-cluster` runs the
# non-browser suite and tests/cluster/ against PostgreSQL + Redis.

WORKERS ?= 2
RUN_WORKERS ?= 1
CLUSTER_DIR := var/cluster
# Below the kernel's ephemeral ports (32768–60999; see scripts/cluster/services.sh).
CLUSTER_PG_PORT ?= 25432
CLUSTER_REDIS_PORT ?= 26379
CLUSTER_STAMP := $(VENV)/.installed-cluster
CLUSTER_ENV = CLUSTER_DIR=$(CLUSTER_DIR) CLUSTER_PG_PORT=$(CLUSTER_PG_PORT) \
	CLUSTER_REDIS_PORT=$(CLUSTER_REDIS_PORT) \
	DATABASE_URL=postgres://chatui@127.0.0.1:$(CLUSTER_PG_PORT)/chatui
SERVICES := scripts/cluster/services.sh

.PHONY: install-cluster run-cluster stop-cluster test-cluster

$(CLUSTER_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[test,postgres,redis]"
	touch $@

install-cluster: $(CLUSTER_STAMP)
	$(CLUSTER_ENV) $(SERVICES) install

run-cluster: install-cluster
	$(CLUSTER_ENV) $(SERVICES) start
	$(CLUSTER_ENV) $(BIN)/python manage.py migrate --noinput -v0
	$(CLUSTER_ENV) REDIS_URL=redis://127.0.0.1:$(CLUSTER_REDIS_PORT)/0 \
		$(BIN)/python manage.py setup_demo
	@echo "PostgreSQL and Redis keep running after Ctrl-C; 'make stop-cluster' stops them."
	$(CLUSTER_ENV) REDIS_URL=redis://127.0.0.1:$(CLUSTER_REDIS_PORT)/0 \
		$(BIN)/python scripts/cluster/serve.py --workers $(WORKERS) \
		--run-workers $(RUN_WORKERS) --host $(HOST) --port $(PORT) --run-dir $(CLUSTER_DIR)

stop-cluster:
	$(CLUSTER_ENV) $(SERVICES) stop

# Redis database 1, so tests never mix with a `make run-cluster` on database 0.
test-cluster: install-cluster
	$(CLUSTER_ENV) REDIS_URL=redis://127.0.0.1:$(CLUSTER_REDIS_PORT)/1 \
		PYTHON=$(BIN)/python TEST_WORKERS=$(TEST_WORKERS) scripts/cluster/test.sh
