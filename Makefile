# chatui — `make run` serves the app, `make test` runs the whole suite.
# Both work on a fresh machine: they create .venv and install what they need.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
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
	$(BIN)/daphne -b $(HOST) -p $(PORT) chatui.asgi:application

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: install chromium
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
