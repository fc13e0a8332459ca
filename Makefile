# The two commands: `make run` (the product on the embedded default) and `make test` (the suite).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?= -n 2

.PHONY: run test lint lock bench superuser screenshots clean

# Settings come from the environment and .env (config/startup.py). Without
# DJANGO_SECRET_KEY(_FILE) every process (this target's and any manage.py run by hand) uses
# the key generated once into var/secret_key.
run: $(VENV)/.runtime ## migrate, reconcile schedules, collect static files, start web + worker
	@$(BIN)/python manage.py migrate --noinput && \
	$(BIN)/python manage.py sync_schedules && \
	$(BIN)/python manage.py collectstatic --noinput -v 0 && \
	exec $(BIN)/python manage.py serve

test: $(VENV)/.dev ## the whole suite (backend tests need DATABASE_URL and REDIS_URL)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy config telegram_bot

# Asks on a terminal; without one (or with DJANGO_SUPERUSER_PASSWORD set) it reads
# DJANGO_SUPERUSER_USERNAME, DJANGO_SUPERUSER_EMAIL and DJANGO_SUPERUSER_PASSWORD instead.
superuser: $(VENV)/.runtime ## create an operator account for /admin/
	@$(BIN)/python manage.py migrate --noinput -v 0 && \
	if [ -t 0 ] && [ -z "$$DJANGO_SUPERUSER_PASSWORD" ]; then \
	  $(BIN)/python manage.py createsuperuser; \
	else \
	  $(BIN)/python manage.py createsuperuser --noinput; \
	fi

# The main pages at 1440x900 and 390x844, in English and Russian, into docs/screenshots/
# (the README links them); the same test checks that each fits its window.
screenshots: $(VENV)/.dev ## refresh docs/screenshots/ from seeded data in headless Chromium
	SCREENSHOTS_DIR=$(CURDIR)/docs/screenshots $(BIN)/python -m pytest -q -p no:xdist \
	  tests/browser/test_screenshots.py

# Every benchmark against PostgreSQL and Redis (DATABASE_URL / REDIS_URL, else local ones; see
# bench/run.py), then bench/RESULTS.md and the README's table. BENCH_ARGS="--only webhook --quick".
bench: $(VENV)/.dev ## benchmarks: every hot path next to its baselines, one run
	$(BIN)/python bench/run.py --readme $(BENCH_ARGS)

lock: ## re-pin requirements*.lock (and the bench peer's) from requirements*.in
	$(PYTHON) -m pip install -q uv
	$(PYTHON) -m uv pip compile --universal --python-version 3.11 --generate-hashes -q \
	  requirements.in -o requirements.lock
	$(PYTHON) -m uv pip compile --universal --python-version 3.11 --generate-hashes -q \
	  requirements-dev.in -o requirements-dev.lock
	$(PYTHON) -m uv pip compile --universal --python-version 3.11 --generate-hashes -q \
	  bench/requirements-peer.in -o bench/requirements-peer.lock

$(VENV)/.python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else \
	  "Python 3.11 or newer is needed; set PYTHON=python3.12 or similar")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@touch $@

$(VENV)/.runtime: requirements.lock $(VENV)/.python
	$(BIN)/python -m pip install -q --require-hashes -r requirements.lock
	@touch $@

$(VENV)/.dev: requirements-dev.lock $(VENV)/.python
	$(BIN)/python -m pip install -q --require-hashes -r requirements-dev.lock
	@touch $@ $(VENV)/.runtime

clean:
	rm -rf $(VENV) var/static
