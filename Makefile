# Everything a fresh machine needs: Python 3.11+, Java 17, and the package registry.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OUT    ?= out/example

.PHONY: setup run test bench clean

setup: $(STAMP)

# Idempotent: re-installs only when pyproject.toml changes.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

# The main job on the bundled example: Delta tables under $(OUT).
run: setup
	$(BIN)/dirtiness run --old examples/old.yaml --new examples/new.yaml --out $(OUT) \
		--summary-json $(OUT)/summary.json

test: setup
	$(BIN)/python -m pytest

# Synthetic catalogs at 10k, 100k and 1M objects; one JSON line of figures each.
bench: setup
	$(BIN)/python bench/run.py --objects 10000
	$(BIN)/python bench/run.py --objects 100000
	$(BIN)/python bench/run.py --objects 1000000

clean:
	rm -rf out .pytest_cache
