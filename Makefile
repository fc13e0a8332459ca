# The two commands: `make run` (the product on the embedded default) and `make test` (the suite).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?= -n 2

.PHONY: run test lint lock superuser clean

# Without DJANGO_SECRET_KEY(_FILE), a private key is generated once into var/secret_key.
SECRET_KEY_SETUP = mkdir -p var; \
	if [ -z "$$DJANGO_SECRET_KEY" ] && [ -z "$$DJANGO_SECRET_KEY_FILE" ]; then \
	  [ -s var/secret_key ] || (umask 077 && $(BIN)/python -c \
	    "import secrets; print(secrets.token_urlsafe(50))" > var/secret_key); \
	  export DJANGO_SECRET_KEY_FILE=var/secret_key; \
	fi

run: $(VENV)/.runtime ## migrate, reconcile schedules, collect static files, start web + worker
	@$(SECRET_KEY_SETUP); \
	$(BIN)/python manage.py migrate --noinput && \
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

superuser: $(VENV)/.runtime ## create an operator account for /admin/
	@$(SECRET_KEY_SETUP); $(BIN)/python manage.py migrate --noinput -v 0 && \
	$(BIN)/python manage.py createsuperuser

lock: ## re-pin requirements*.lock from requirements*.in
	$(PYTHON) -m pip install -q uv
	$(PYTHON) -m uv pip compile --universal --python-version 3.11 --generate-hashes -q \
	  requirements.in -o requirements.lock
	$(PYTHON) -m uv pip compile --universal --python-version 3.11 --generate-hashes -q \
	  requirements-dev.in -o requirements-dev.lock

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
