# The two commands: `make run` (demo server on http://localhost:8000, or PORT=…) and `make test` (whole suite).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# localhost, not 127.0.0.1: an IP address cannot be a WebAuthn relying party, so passkeys work only
# on a host name (and browsers allow them over plain http on localhost alone). demo_server listens
# on both 127.0.0.1 and ::1 for it, whichever `localhost` resolves to first.
HOST ?= localhost
PORT ?= 8000
# The server's public base URL (issuer, metadata, `iss`, emails, seed_demo's URLs) follows HOST and
# PORT unless OAUTH_ISSUER is set: `make run PORT=8123` is consistent on :8123. A wildcard bind
# address is not a URL a browser can use, so it becomes localhost.
ISSUER_HOST = $(if $(filter 0.0.0.0 [::],$(HOST)),localhost,$(HOST))
OAUTH_ISSUER ?= http://$(ISSUER_HOST):$(PORT)

.PHONY: run manage test install migrate clean messages

# `make run` installs the runtime dependencies only; `make test` adds the test extra (browsers'
# driver, fuzzers, linters: several hundred MB the demo does not need).
TEST_STAMP := $(VENV)/.installed-test-stamp

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("Python 3.11+ is required (found %s)" % sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	@pkg-config --exists icu-uc icu-i18n 2>/dev/null || $(BIN)/python -c 'import icu' 2>/dev/null || { echo "PyICU is built against the system's ICU: install its development files and pkg-config first (Debian: apt-get install libicu-dev pkg-config)." >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet .
	touch $(STAMP)

$(TEST_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip install --quiet ".[test]"
	touch $(TEST_STAMP)

install: $(STAMP)

# Debug on by default so that no secret key or HTTPS is needed for the local demo.
run: export DJANGO_DEBUG ?= 1
run: export OAUTH_ISSUER := $(OAUTH_ISSUER)
run: $(STAMP)
	@$(BIN)/python manage.py migrate --noinput --verbosity 0
	@echo "Database ready (migrations applied)."
	@$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	@$(BIN)/python manage.py demo_server $(HOST):$(PORT)

# Any manage.py command with the environment `make run` gives its server (debug on, the same
# OAUTH_ISSUER for the same HOST and PORT), so that what it prints (identityprovider's redirect_uri,
# seed_demo's URLs) is that server's: make manage PORT=8123 ARGS="identityprovider list"
manage: export DJANGO_DEBUG ?= 1
manage: export OAUTH_ISSUER := $(OAUTH_ISSUER)
manage: $(STAMP)
	@$(BIN)/python manage.py $(ARGS)

migrate: $(STAMP)
	$(BIN)/python manage.py migrate --noinput

# Lint and format checks (ruff), then the suite: SQLite by default; PostgreSQL when DATABASE_URL
# names one. Extra pytest arguments: make test ARGS="-k secret"
test: lint
	$(BIN)/python -m pytest $(ARGS)

.PHONY: lint format
lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# Rewrites the tree: ruff's safe fixes, then its formatter.
format: $(TEST_STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Longer property-based fuzzing (tests/security/test_fuzz.py): FUZZ_EXAMPLES examples per test
# (the normal suite runs 60).
.PHONY: fuzz
fuzz: $(TEST_STAMP)
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-2000} $(BIN)/python -m pytest tests/security/test_fuzz.py $(ARGS)

# Longer schema-driven fuzzing of the token, revoke, introspect and /v2/me endpoints (schemathesis):
# SCHEMA_FUZZ_EXAMPLES requests per operation and mode (the normal suite runs 15).
.PHONY: fuzz-schema
fuzz-schema: $(TEST_STAMP)
	SCHEMA_FUZZ_EXAMPLES=$${SCHEMA_FUZZ_EXAMPLES:-500} $(BIN)/python -m pytest tests/security/test_schema_fuzz.py $(ARGS)

clean:
	rm -rf $(VENV) staticfiles .pytest_cache

# Load benchmark on the local PostgreSQL server (docs/performance.md): make bench
BENCH_STAMP := $(VENV)/.bench-installed-stamp
.PHONY: bench

$(BENCH_STAMP): pyproject.toml $(TEST_STAMP)
	$(BIN)/python -m pip install --quiet ".[test,bench]"
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BIN)/python -m bench.run

# Translations (docs/languages.md): every sentence of ours into each locale/<language>/.../django.po
# (`makemessages`, which needs GNU gettext: Debian's gettext package), then each .po compiled to
# the .mo committed beside it. A new language: make messages LANGUAGE=pt_BR, then its line in
# config/settings.py LANGUAGES once its .po is complete (tests/i18n/test_catalogues.py checks).
MESSAGES_IGNORE := --ignore='tests/*' --ignore='bench/*' --ignore='examples/*' --ignore='docs/*' --ignore='staticfiles/*' --ignore='locale/*'
# Debug on, as for `make run`: no secret key is needed to read the templates and the code.
messages: export DJANGO_DEBUG ?= 1
messages: $(STAMP)
	$(BIN)/python manage.py makemessages $(if $(LANGUAGE),-l $(LANGUAGE),--all) $(MESSAGES_IGNORE) --no-location --no-wrap
	$(BIN)/python manage.py compilemessages --ignore='.venv/*' --ignore='staticfiles/*'
